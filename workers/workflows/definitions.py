"""Workflow definitions: the YAML shape and the compiled form the engine runs."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workers.workflows.template import Template

NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
BUILTINS = frozenset({"state_id", "workflow", "thoughts"})
"""Variables every template may read: the run's id, the workflow's id, and every reply so far ({step, text})."""
DEFAULT_COMPLETION = "The workflow is complete. Use the saved results to answer the user."


class DefinitionError(ValueError):
    """A definition cannot be loaded. The message names the file and, when there is one, the step."""

    def __init__(self, file: str | Path, message: str, step: str | None = None) -> None:
        where = f"{file}, step {step!r}" if step else str(file)
        super().__init__(f"{where}: {message}")
        self.file, self.step = str(file), step


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class CallDef(_Model):
    """A Geogate tool the model should call during the step, with templated arguments."""

    tool: str = Field(pattern=NAME)
    with_: dict[str, str] = Field(default_factory=dict, alias="with")


class StepDef(_Model):
    """One step as written in YAML."""

    id: str = Field(pattern=NAME)
    title: str = ""
    instruction: str = Field(min_length=1)
    save: str | None = Field(default=None, pattern=NAME)
    """Variable the model's reply is saved into; without it the step only wants an acknowledgment."""
    format: Literal["text", "list", "json"] = "text"
    """How the reply is parsed: kept as text, split into a list of lines, or parsed as JSON."""
    require: tuple[str, ...] = ()
    """Keys a `json` reply must have."""
    append: bool = False
    """Add each reply to a list instead of replacing the value (steps visited in a loop)."""
    next: str | dict[str, str] | None = None
    """The next step, or `{choice: step}` when the model chooses; the following step when omitted."""
    complete: bool = False
    calls: tuple[CallDef, ...] = ()


class WorkflowDef(_Model):
    """A whole definition file."""

    id: str = Field(pattern=NAME)
    description: str = Field(min_length=1)
    inputs: dict[str, str] = Field(default_factory=dict)
    """Input name → what the caller should pass."""
    completion: str = DEFAULT_COMPLETION
    steps: tuple[StepDef, ...] = Field(min_length=1)


@dataclass(frozen=True)
class Step:
    """A step with its templates parsed and its successors resolved."""

    spec: StepDef
    number: int
    instruction: Template
    calls: tuple[tuple[str, dict[str, Template]], ...]
    successors: dict[str, str] = field(default_factory=dict)
    """Choice → step id; the single unconditional successor sits under the key ""."""

    @property
    def id(self) -> str:
        """The step's id."""
        return self.spec.id

    @property
    def choices(self) -> list[str]:
        """The names the model may pass as `choice` (empty unless `next` branches)."""
        return [c for c in self.successors if c]

    def templates(self) -> Iterable[Template]:
        """The instruction and every tool-call argument template."""
        yield self.instruction
        for _tool, args in self.calls:
            yield from args.values()


@dataclass(frozen=True)
class Workflow:
    """A loaded, validated definition: what the engine runs."""

    spec: WorkflowDef
    steps: dict[str, Step]
    completion: Template
    file: str
    sha256: str

    @property
    def id(self) -> str:
        """The workflow's id."""
        return self.spec.id

    @cached_property
    def first(self) -> Step:
        """The step every run starts at."""
        return next(iter(self.steps.values()))

    def step(self, step_id: str) -> Step:
        """The step called `step_id` (KeyError when there is none)."""
        return self.steps[step_id]
