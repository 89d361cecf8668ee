"""Loading workflow definitions: one YAML file, a folder, or the shipped folder plus a configured extra one."""

import hashlib
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from workers.workflows.definitions import DefinitionError, Workflow, WorkflowDef
from workers.workflows.validate import compile_workflow


def _step_label(raw: Any, loc: tuple[int | str, ...]) -> str | None:
    if len(loc) < 2 or loc[0] != "steps" or not isinstance(loc[1], int):
        return None
    steps = raw.get("steps") if isinstance(raw, dict) else None
    step = steps[loc[1]] if isinstance(steps, list) and loc[1] < len(steps) else None
    return str(step.get("id")) if isinstance(step, dict) and step.get("id") else f"#{loc[1] + 1}"


def parse_spec(file: str | Path, text: str) -> WorkflowDef:
    """Parse YAML text into a `WorkflowDef` (the seed's `workflow:` wrapper is accepted).

    Raises:
        DefinitionError: the YAML is invalid or does not have the definition's shape.
    """
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DefinitionError(file, f"invalid YAML: {exc}") from exc
    if isinstance(raw, dict) and set(raw) == {"workflow"}:
        raw = raw["workflow"]
    try:
        return WorkflowDef.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        message = f"{at}: {first['msg']}" if at else first["msg"]
        raise DefinitionError(file, message, _step_label(raw, tuple(first["loc"]))) from exc


def load_text(file: str | Path, text: str) -> Workflow:
    """Parse, compile and validate one definition.

    Raises:
        DefinitionError: naming `file` and the offending step.
    """
    return compile_workflow(file, parse_spec(file, text), hashlib.sha256(text.encode()).hexdigest())


def load_file(path: Path) -> Workflow:
    """Load one YAML definition file (see `load_text`)."""
    return load_text(path, path.read_text(encoding="utf-8"))


def builtin_dir() -> Path:
    """The definitions shipped with the package."""
    return Path(str(files("workers.workflows").joinpath("definitions")))


def load_dir(folder: Path) -> dict[str, Workflow]:
    """Every `*.yaml`/`*.yml` definition in `folder`, by id.

    Raises:
        DefinitionError: a file is malformed, or two files declare the same id.
    """
    found: dict[str, Workflow] = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        workflow = load_file(path)
        if workflow.id in found:
            raise DefinitionError(path, f"workflow id {workflow.id!r} is also defined in {found[workflow.id].file}")
        found[workflow.id] = workflow
    return found


def load_definitions(extra_dir: Path | None = None) -> Mapping[str, Workflow]:
    """The shipped definitions, then those of `extra_dir` (which may replace a shipped one by id).

    Raises:
        DefinitionError: a definition is malformed.
    """
    workflows = load_dir(builtin_dir())
    if extra_dir is not None:
        workflows |= load_dir(extra_dir)
    return workflows
