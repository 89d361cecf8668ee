"""A tool is one definition and one job: every `ToolSpec` has exactly one job bound to it, every job a definition,
and each lives in the concept module of the same name on its side (`schemas/tools/<concept>.py`,
`workers/tools/<concept>.py`)."""

import pkgutil
from collections import Counter

import schemas.tools
import workers.tools
from schemas.tools import INTERNAL, SPECS, TOOLS, ToolSpec, defined_specs
from schemas.tools.tiling import TILE_SUFFIX, tile_spec
from workers.jobs import BOUND, JOBS
from workers.tools import load_all

load_all()


def _concept_of_spec() -> dict[str, str]:
    """Tool name → the `schemas.tools` module that defines it."""
    found: dict[str, str] = {}
    for info in pkgutil.walk_packages(schemas.tools.__path__, prefix="schemas.tools."):
        module = __import__(info.name, fromlist=["_"])
        for value in vars(module).values():
            if isinstance(value, ToolSpec):
                found.setdefault(value.name, info.name.removeprefix("schemas.tools."))
    return found


def test_every_definition_has_a_job_and_every_job_a_definition() -> None:
    """Geogate's own definitions each have a job; every job (extra tools' included, once loaded) a definition."""
    assert set(TOOLS) | set(INTERNAL) <= set(JOBS) <= set(SPECS)
    assert set(BOUND) == set(JOBS)


def test_each_job_is_bound_to_its_definition_object() -> None:
    for name, spec in BOUND.items():
        assert spec == SPECS[name], name


def test_no_two_definitions_share_a_name() -> None:
    names = Counter(spec.name for spec in defined_specs())
    assert [name for name, count in names.items() if count > 1] == []


def test_a_job_lives_in_the_workers_module_named_like_its_definitions_module() -> None:
    concepts = _concept_of_spec()
    for name, fn in JOBS.items():
        if name.endswith(TILE_SUFFIX) or name not in concepts:  # a tile's job, or an extra tool's
            continue
        assert fn.__module__ == f"workers.tools.{concepts[name]}", name


def test_every_job_module_has_a_definitions_module_of_the_same_name() -> None:
    jobs = {info.name for info in pkgutil.iter_modules(workers.tools.__path__)}
    definitions = {info.name for info in pkgutil.iter_modules(schemas.tools.__path__)}
    assert jobs <= definitions


def test_internal_specs_are_marked_and_never_published() -> None:
    assert all(spec.internal for spec in INTERNAL.values())
    assert not any(spec.internal for spec in TOOLS.values())
    assert not set(TOOLS) & set(INTERNAL)


def test_every_tiled_tool_has_its_tile_tool_and_no_other_tool_has_one() -> None:
    tiles = {name for name in INTERNAL if name.endswith(TILE_SUFFIX)}
    assert tiles == {tile_spec(spec).name for spec in TOOLS.values() if spec.tiled}
