"""Dependency rule (docs/layout.md): gateway and workers never import each other; schemas imports neither nor the
shared runtime (geogate); inside geogate, process plumbing imports none of it and the queue never the event store; no
product module imports the tests or names the conformance fixtures; the product and bench form no import circle."""

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("gateway", "workers", "schemas", "geogate")
"""The packages that ship (pyproject's `packages.find`)."""

FORBIDDEN = {
    "gateway": {"workers", "tests"},
    "workers": {"gateway", "tests"},
    "geogate": {"gateway", "workers", "tests"},
    "schemas": {"gateway", "workers", "geogate", "tests"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_the_dependency_rule(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_rule_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text("from workers.app import app\nimport gateway.server\n")
    assert imported_packages(bad) == {"workers", "gateway"}


def imported_modules(path: Path) -> set[str]:
    """Full dotted names of what `path` imports (`from a.b import c` gives `a.b`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


PREFLIGHT_DOMAIN = ("pyproj", "schemas.preflight", "schemas.call_plan")


def test_the_event_store_knows_nothing_of_the_preflight_domain() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith(PREFLIGHT_DOMAIN))
        for path in (ROOT / "geogate").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


INSIDE_GEOGATE = {
    "geogate/process": ("geogate",),
    "geogate/queue": ("geogate.eventlog", "geogate.process"),
}
"""What each part of the shared runtime must not import: process plumbing stands alone, the queue's plumbing knows
no event store (the store builds its outbox message with `geogate.queue.message`, never the other way)."""


@pytest.mark.parametrize("part", sorted(INSIDE_GEOGATE))
def test_the_shared_runtime_s_parts_keep_their_layers(part: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith(INSIDE_GEOGATE[part]))
        for path in (ROOT / part).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_nothing_but_the_command_line_imports_the_command_line() -> None:
    """`geogate.cli` runs the roles as processes (`python -m gateway`, `python -m workers`); no role imports it."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith("geogate.cli"))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if not path.is_relative_to(ROOT / "geogate" / "cli")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


OUTCOME_READERS = {"gateway/outcomes.py", "workers/run/outcomes.py"}
"""The one module per process (gateway, worker) that reads the calls stream to answer or resume a waiting call."""
LOG_VIEWS = {
    "gateway/ops/tail.py": "`geogate tail`, its own process: prints every stream",
    "gateway/ops/reads.py": "the /ops live log: shows every stream to an operator, answers no call",
    "geogate/calls/ops_feed.py": "folds every stream into the ops projections",
}


def xread_modules() -> set[str]:
    found = set()
    for package in ("geogate", "gateway", "workers"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "xread":
                    found.add(str(path.relative_to(ROOT)))
    return found


def test_one_module_per_process_reads_outcomes_from_the_calls_stream() -> None:
    readers = xread_modules() - set(LOG_VIEWS)
    assert readers == OUTCOME_READERS
    assert {r.split("/")[0] for r in readers} == {"gateway", "workers"}


def product_files() -> Iterator[Path]:
    """Every file that ships with the product packages (source, Lua, templates, YAML), caches and npm trees aside."""
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*"):
            if path.is_file() and not {"__pycache__", "node_modules", "vendor"} & set(path.parts):
                yield path


def test_no_product_file_names_the_conformance_fixtures() -> None:
    """Issue 33: the suite's fixtures live under tests/ and are loaded by a setting (`GEOGATE_EXTRA_TOOLS`)."""
    naming = [str(p.relative_to(ROOT)) for p in product_files() if b"conformance" in p.read_bytes().lower()]
    assert naming == []


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, known: set[str]) -> set[str]:
    """The product modules one import statement loads: `from a.b import c` loads `a.b.c` if it is one, else `a.b`."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & known
    base = node.module or ""
    if node.level:
        package = here.split(".") if is_package else here.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names} & known


def import_edges(path: Path, known: set[str], root: Path = ROOT) -> set[str]:
    """Product modules `path` imports, at any depth (inside functions too), except under `if TYPE_CHECKING:`."""
    here, found = module_name(path, root), set()
    pending: list[ast.AST] = [ast.parse(path.read_text(), filename=str(path))]
    while pending:
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                pending += child.orelse
            elif isinstance(child, ast.Import | ast.ImportFrom):
                found |= _imported(child, here, path.name == "__init__.py", known)
            else:
                pending.append(child)
    return found - {here}


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    files = {module_name(p, root): p for package in packages for p in (root / package).rglob("*.py")}
    return {name: import_edges(path, set(files), root) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle a depth-first walk meets (each once, from where the walk entered it)."""
    found: list[list[str]] = []
    state: dict[str, str] = {}
    path: list[str] = []

    def walk(node: str) -> None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt)
        state[node] = "done"
        path.pop()

    for node in sorted(graph):
        if node not in state:
            walk(node)
    return found


def test_product_imports_form_no_circle() -> None:
    """Issue 33: a circle (gateway.server ↔ its fixtures, a package ↔ the families it registers) makes import order
    matter; the layer below never reaches back up, not even inside a function."""
    assert cycles(import_graph(ROOT, PRODUCT)) == []


def tree_import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """The product's modules by dotted name, and bench's scripts by file name: `bench/run.py` runs with `bench/` on
    `sys.path`, so `import hop` in one bench script loads `bench/hop.py`."""
    graph = import_graph(root, PRODUCT)
    scripts = {path.stem: path for path in (root / "bench").glob("*.py")}
    known = set(graph) | set(scripts)
    return graph | {name: import_edges(path, known, root / "bench") for name, path in scripts.items()}


def test_no_import_circle_anywhere_in_the_tree_bench_included() -> None:
    """The product packages and the bench scripts importing each other (bench imports the product, never the other
    way), function-level imports included: a circle makes import order matter."""
    assert cycles(tree_import_graph()) == []


def test_the_circle_finder_sees_a_circle_through_a_lazy_import_and_skips_type_checking(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from pkg import c\n")
    (tmp_path / "pkg" / "c.py").write_text("from . import b\n")

    graph = import_graph(tmp_path, ("pkg",))

    assert graph["pkg.a"] == set()  # TYPE_CHECKING imports never run
    assert graph["pkg.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.b"}
    assert cycles(graph) == [["pkg.b", "pkg.c", "pkg.b"]]


def test_the_tree_graph_reads_bench_scripts_as_top_level_modules(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.py").write_text("import b\nfrom geogate.settings import Settings\n")
    (tmp_path / "bench" / "b.py").write_text("def main():\n    from a import f\n")

    graph = tree_import_graph(tmp_path)

    assert graph == {"a": {"b"}, "b": {"a"}}
    assert cycles(graph) == [["a", "b", "a"]]


SHARED_FIXTURES = ("tests.stac",)
"""What a bench may take from the tests: the STAC servers the tests start (a STAC API on PostgreSQL, a COG range
server) and their scene generator, which `bench/stac.py` serves its data from; no test module."""


def test_bench_imports_nothing_from_the_tests_but_their_shared_servers() -> None:
    def from_tests(name: str) -> bool:
        shared = any(name == f or name.startswith(f + ".") for f in SHARED_FIXTURES)
        return (name == "tests" or name.startswith("tests.")) and not shared

    shared = [p for f in SHARED_FIXTURES for p in sorted((ROOT / f.replace(".", "/")).glob("*.py"))]
    offenders = {
        str(path.relative_to(ROOT))
        for path in [*sorted((ROOT / "bench").glob("*.py")), *shared]
        if any(from_tests(name) for name in imported_modules(path))
    }
    assert not offenders  # nor do the shared servers take anything else of the tests


DOMAIN = "geogate.calls"
"""The read models the event store is handed; the store names them nowhere."""


def names_in(path: Path) -> set[str]:
    """Every module `path` imports at any depth (inside functions and `TYPE_CHECKING` blocks too) and every string
    constant it holds (what `importlib.import_module` or a lazy path would name)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return found


def names_domain(name: str) -> bool:
    return DOMAIN in name or DOMAIN.replace(".", "/") in name


def test_the_event_store_imports_nothing_from_the_read_models_it_is_handed() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(n for n in names_in(path) if names_domain(n))
        for path in (ROOT / "geogate" / "eventlog").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_domain_check_sees_a_lazy_import_and_a_string(tmp_path: Path) -> None:
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from geogate.calls.store import EventStore\n")
    named = tmp_path / "named.py"
    named.write_text("import importlib\nMODULE = importlib.import_module('geogate.calls.ops_feed')\n")
    via_parent = tmp_path / "parent.py"
    via_parent.write_text("from geogate import calls\n")

    assert any(names_domain(n) for n in names_in(lazy))
    assert any(names_domain(n) for n in names_in(named))
    assert any(names_domain(n) for n in names_in(via_parent))


SCHEMAS_THIRD_PARTY = {"pydantic", "msgpack", "pyproj", "ulid"}
"""What the contract may import beside the standard library (docs/layout.md): models, the codec, CRS validation, ids."""


def test_the_contract_imports_only_what_the_layout_page_says() -> None:
    found = set()
    for path in (ROOT / "schemas").rglob("*.py"):
        found |= imported_packages(path)
    outside = found - set(sys.stdlib_module_names) - {"schemas", "__future__"}
    assert outside == SCHEMAS_THIRD_PARTY
