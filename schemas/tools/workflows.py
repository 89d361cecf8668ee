"""Guided-workflow tools: start, answer and inspect a run; each answer names the next call (docs/workflows.md)."""

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas import routes
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec

StateId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+$")]
TEXT_MAX = 100_000


class _Args(ToolArgs):
    model_config = ConfigDict(use_attribute_docstrings=True)


class StartChainOfThoughtArgs(_Args):
    problem: str = Field(min_length=1, max_length=TEXT_MAX)
    """The problem to reason about, in the user's words."""


class StartWorkflowArgs(_Args):
    workflow: str = Field(min_length=1, max_length=200)
    """Id of the workflow (see list_workflows), e.g. `chain_of_thought`, `research`, `plan_reprojection`."""
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    """The workflow's inputs by name (list_workflows shows which it needs)."""


class SubmitThoughtArgs(_Args):
    state_id: StateId
    """The `state_id` from the previous workflow answer."""
    thought: str = Field(min_length=1, max_length=TEXT_MAX)
    """Your reply to the current step's instruction."""
    version: int | None = Field(default=None, ge=1)
    """The `version` from the previous answer: a stale or repeated call is refused instead of answering the
    wrong step. Recommended."""
    choice: str | None = Field(default=None, max_length=200)
    """For steps that offer `choices`: which way to go."""


class ContinueWorkflowArgs(_Args):
    state_id: StateId
    """The `state_id` from the previous workflow answer."""
    acknowledgment: str = Field(default="done", min_length=1, max_length=TEXT_MAX)
    """What you did for the current step (a short note is enough)."""
    version: int | None = Field(default=None, ge=1)
    """The `version` from the previous answer (see submitThought)."""
    choice: str | None = Field(default=None, max_length=200)
    """For steps that offer `choices`: which way to go."""


class ListWorkflowsArgs(_Args):
    pass


class GetWorkflowStateArgs(_Args):
    state_id: StateId
    """The run to show."""


class NextAction(BaseModel):
    """A tool call to make: its name and the arguments to send (placeholders in <angle brackets>)."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    tool: str
    with_: dict[str, JsonValue] = Field(default_factory=dict, alias="with")

    @classmethod
    def of(cls, tool: str, arguments: dict[str, JsonValue]) -> "NextAction":
        """The call of `tool` with `arguments` (`with` is a Python keyword, hence this constructor)."""
        return cls.model_validate({"tool": tool, "with": arguments})

    def describe(self) -> str:
        """The call in words: `tool with {json arguments}`."""
        return f"{self.tool} with {json.dumps(self.with_, ensure_ascii=False)}"


class WorkflowAnswer(ToolResult):
    """Where a run stands and what the model should do next (the seed's answer shape)."""

    workflow: str
    state_id: StateId
    status: Literal["active", "completed", "expired"]
    version: int
    """Send it back as `version` so a stale call is refused."""
    current_step: int
    """1-based number of the current step."""
    step: str
    """Id of the current step."""
    title: str = ""
    instruction: str
    """What to do now (after completion: how to use the results)."""
    call_first: list[NextAction] = Field(default_factory=list)
    """Geogate tools to call for this step before replying."""
    next_action: NextAction | None
    """The workflow call to make next; None once the run has ended."""
    choices: list[str] = Field(default_factory=list)
    """For branching steps: the values `choice` accepts."""
    saved: dict[str, JsonValue] = Field(default_factory=dict)
    """Values saved so far, by name."""

    def summary(self) -> str:
        head = f"Workflow {self.workflow} (state {self.state_id}, version {self.version})"
        if self.next_action is None:
            return f"{head} has {self.status}. No further workflow call is needed.\n\n{self.instruction}"
        parts = [f"{head}, step {self.current_step} '{self.step}'.", "", self.instruction.rstrip(), ""]
        if self.call_first:
            parts.append("First call " + "; then ".join(call.describe() for call in self.call_first) + ".")
        if self.choices:
            parts.append("Pass `choice` as one of: " + ", ".join(self.choices) + ".")
        parts.append(f"Then call {self.next_action.describe()}.")
        return "\n".join(parts)


class WorkflowInfo(BaseModel):
    """A workflow available to start."""

    model_config = ConfigDict(extra="forbid")

    id: str
    description: str
    inputs: dict[str, str]
    """Input name → what to pass."""
    steps: list[str]
    start: NextAction


class WorkflowList(ToolResult):
    """The workflows that can be started."""

    workflows: list[WorkflowInfo]

    def summary(self) -> str:
        lines = [f"{len(self.workflows)} workflows:"]
        lines += [f"- {w.id}: {w.description} Start: {w.start.describe()}." for w in self.workflows]
        return "\n".join(lines)


def _spec(
    name: str,
    title: str,
    description: str,
    args: type[ToolArgs],
    hints: Hints,
    examples: tuple[dict[str, Any], ...] = (),
) -> ToolSpec:
    return ToolSpec(
        name, title, description, routes.WORKFLOW, args, WorkflowAnswer, hints, timeout_s=30.0, examples=examples
    )


_STEP = Hints(read_only=False, destructive=False, idempotent=False)
_NEXT = "The answer gives the next instruction and the exact call to make next."

START_CHAIN_OF_THOUGHT = _spec(
    "startChainOfThought",
    "Start a chain of thought",
    "Start step-by-step reasoning about a problem (workflow chain_of_thought). Use it for complex problems: "
    f"each step gets your full attention. {_NEXT}",
    StartChainOfThoughtArgs,
    _STEP,
    examples=({"problem": "Which CRS should a national flood map of Austria use?"},),
)
SUBMIT_THOUGHT = _spec(
    "submitThought",
    "Submit a thought",
    f"Reply to the current step of a workflow run with your reasoning; it is saved for later steps. {_NEXT}",
    SubmitThoughtArgs,
    _STEP,
    examples=({"state_id": "wf_01J9Z8K6", "thought": "A metric, equal-area CRS: EPSG:3035."},),
)
CONTINUE_WORKFLOW = _spec(
    "continueWorkflow",
    "Continue a workflow",
    f"Acknowledge the current step of a workflow run (when it asks for an action, not a thought). {_NEXT}",
    ContinueWorkflowArgs,
    _STEP,
    examples=({"state_id": "wf_01J9Z8K6"},),
)
START_WORKFLOW = _spec(
    "start_workflow",
    "Start a workflow",
    "Start any guided workflow by id with its inputs (list_workflows shows them), e.g. `plan_reprojection` "
    f"to plan and verify a raster reprojection with raster_info, raster_reproject and raster_stats. {_NEXT}",
    StartWorkflowArgs,
    _STEP,
    examples=({"workflow": "plan_reprojection", "inputs": {"uri": "dem.tif", "dst_crs": "EPSG:3857"}},),
)
GET_WORKFLOW_STATE = _spec(
    "get_workflow_state",
    "Show a workflow run",
    f"Show where a workflow run stands: current step, instruction, saved values. {_NEXT}",
    GetWorkflowStateArgs,
    Hints(read_only=False, idempotent=True),
    examples=({"state_id": "wf_01J9Z8K6"},),
)
LIST_WORKFLOWS = ToolSpec(
    name="list_workflows",
    title="List workflows",
    description="List the guided workflows that can be started, with their inputs and the call that starts each.",
    queue=routes.WORKFLOW,
    args=ListWorkflowsArgs,
    result=WorkflowList,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=30.0,
    examples=({},),
)
