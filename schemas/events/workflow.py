"""Events of the guided-workflow aggregate (`workflow:<state_id>`): started → (submitted → advanced)* → completed."""

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, JsonValue

from schemas.events.base import EventData

Version = Annotated[int, Field(ge=1, le=2**31)]
"""Position of an event in its run (1-based); appends expect the previous value."""
StepNumber = Annotated[int, Field(ge=1, le=2**31)]


def workflow_aggregate(state_id: str) -> str:
    """The aggregate of one workflow run."""
    return f"workflow:{state_id}"


class WorkflowStarted(EventData):
    """A model started a workflow; the first step's instruction is rendered from `inputs`."""

    type: Literal["workflow.started"] = "workflow.started"
    state_id: str
    workflow: str
    version: Version = 1
    step: str
    """Id of the first step."""
    step_number: StepNumber = 1
    instruction: str
    """The first step's instruction, rendered (so the transcript needs no definition)."""
    inputs: dict[str, JsonValue] = Field(default_factory=dict)
    ttl_s: float
    """Idle time after which the run expires; fixed at start so a settings change never rewrites history."""
    expires_at: datetime
    definition_sha256: str = ""
    """Digest of the definition file the run started from."""


class WorkflowThoughtSubmitted(EventData):
    """The model answered the current step (`submitThought` or `continueWorkflow`)."""

    type: Literal["workflow.thought_submitted"] = "workflow.thought_submitted"
    state_id: str
    version: Version
    step: str
    text: str
    """What the model sent, verbatim."""
    save: str | None = None
    """The variable the step saves into, if any."""
    value: JsonValue = None
    """The variable's whole new value (parsed text, list or JSON; lists grow when the step appends)."""
    choice: str | None = None
    """The branch the model chose, for steps whose `next` offers choices."""
    call_id: str = ""
    """The tool call that submitted it: a redelivered call finishes its own step instead of failing."""


class WorkflowAdvanced(EventData):
    """The run moved to its next step; `instruction` is that step's rendered instruction."""

    type: Literal["workflow.advanced"] = "workflow.advanced"
    state_id: str
    version: Version
    from_step: str
    step: str
    step_number: StepNumber
    instruction: str
    expires_at: datetime


class WorkflowCompleted(EventData):
    """The run finished its last step."""

    type: Literal["workflow.completed"] = "workflow.completed"
    state_id: str
    version: Version
    step: str
    message: str = ""
    """The definition's rendered completion text."""


class WorkflowExpired(EventData):
    """The run was touched after being idle longer than its `ttl_s`; it accepts nothing more."""

    type: Literal["workflow.expired"] = "workflow.expired"
    state_id: str
    version: Version
    step: str = ""
    """The step the run was waiting on."""
    idle_s: float
    """Seconds between the last event and the touch that found it expired."""


WORKFLOW_EVENTS = (WorkflowStarted, WorkflowThoughtSubmitted, WorkflowAdvanced, WorkflowCompleted, WorkflowExpired)
