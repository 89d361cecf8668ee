"""Workflow state as the pure fold of its events, and the transcript rendered from it."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from pydantic import JsonValue

from schemas.events import (
    Event,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.transcript import TranscriptEntry, TranscriptView, expired_text
from schemas.transcript import render_transcript as render_view

Status = Literal["active", "completed", "expired"]


@dataclass(frozen=True)
class WorkflowState:
    """Everything known about one run, folded from its events (never from the clock)."""

    state_id: str
    workflow: str
    status: Status
    version: int
    step: str
    step_number: int
    instruction: str
    inputs: dict[str, JsonValue]
    ttl_s: float
    started_at: datetime
    updated_at: datetime
    expires_at: datetime
    saved: dict[str, JsonValue] = field(default_factory=dict)
    pending: WorkflowThoughtSubmitted | None = None
    """A reply whose advance is not in the log yet (the appending worker died between the two appends)."""
    message: str = ""
    transcript: tuple[TranscriptEntry, ...] = ()

    @property
    def replies(self) -> list[TranscriptEntry]:
        """Every reply so far, in order (the `thoughts` built-in)."""
        return [e for e in self.transcript if e.kind == "reply"]

    def context(self) -> dict[str, JsonValue]:
        """Template variables: inputs, saved values and the built-ins (`state_id`, `workflow`, `thoughts`)."""
        thoughts: list[JsonValue] = [{"step": e.step, "text": e.text} for e in self.replies]
        builtins: dict[str, JsonValue] = {"state_id": self.state_id, "workflow": self.workflow, "thoughts": thoughts}
        return {**self.inputs, **self.saved, **builtins}


def _started(_: WorkflowState | None, event: Event, data: Any) -> WorkflowState:
    data = event.payload(WorkflowStarted)
    return WorkflowState(
        state_id=data.state_id,
        workflow=data.workflow,
        status="active",
        version=data.version,
        step=data.step,
        step_number=data.step_number,
        instruction=data.instruction,
        inputs=dict(data.inputs),
        ttl_s=data.ttl_s,
        started_at=event.ts,
        updated_at=event.ts,
        expires_at=data.expires_at,
        transcript=(TranscriptEntry.of(event, data, "instruction", data.instruction),),
    )


def _submitted(state: WorkflowState, event: Event, data: Any) -> WorkflowState:
    data = event.payload(WorkflowThoughtSubmitted)
    saved = state.saved if data.save is None else {**state.saved, data.save: data.value}
    entry = TranscriptEntry.of(event, data, "reply", data.text)
    return replace(
        state,
        version=data.version,
        saved=saved,
        pending=data,
        updated_at=event.ts,
        transcript=(*state.transcript, entry),
    )


def _advanced(state: WorkflowState, event: Event, data: Any) -> WorkflowState:
    data = event.payload(WorkflowAdvanced)
    entry = TranscriptEntry.of(event, data, "instruction", data.instruction)
    return replace(
        state,
        version=data.version,
        step=data.step,
        step_number=data.step_number,
        instruction=data.instruction,
        pending=None,
        updated_at=event.ts,
        expires_at=data.expires_at,
        transcript=(*state.transcript, entry),
    )


def _completed(state: WorkflowState, event: Event, data: Any) -> WorkflowState:
    data = event.payload(WorkflowCompleted)
    entry = TranscriptEntry.of(event, data, "completed", data.message)
    return replace(
        state,
        status="completed",
        version=data.version,
        message=data.message,
        pending=None,
        updated_at=event.ts,
        transcript=(*state.transcript, entry),
    )


def _expired(state: WorkflowState, event: Event, data: Any) -> WorkflowState:
    data = event.payload(WorkflowExpired)
    entry = TranscriptEntry.of(event, data, "expired", expired_text(data.idle_s))
    return replace(
        state,
        status="expired",
        version=data.version,
        pending=None,
        updated_at=event.ts,
        transcript=(*state.transcript, entry),
    )


_Apply = Callable[[Any, Event, Any], WorkflowState]
_APPLY: dict[type, _Apply] = {
    WorkflowStarted: _started,
    WorkflowThoughtSubmitted: _submitted,
    WorkflowAdvanced: _advanced,
    WorkflowCompleted: _completed,
    WorkflowExpired: _expired,
}


def apply(state: WorkflowState | None, event: Event) -> WorkflowState | None:
    """The state after `event`. Events of other families, and anything before `workflow.started`, are ignored."""
    handler = _APPLY.get(type(event.data))
    if handler is None or (state is None and handler is not _started):
        return state
    return handler(state, event, event.data)


def fold(events: Iterable[Event]) -> WorkflowState | None:
    """Fold a run's events, in log order, into its state (None when it never started)."""
    state: WorkflowState | None = None
    for event in events:
        state = apply(state, event)
    return state


def render_transcript(state: WorkflowState) -> str:
    """The run as Markdown (the same text the gateway renders from the projection for `workflow://{state_id}`)."""
    view = TranscriptView(
        state_id=state.state_id,
        workflow=state.workflow,
        status=state.status,
        step=state.step,
        step_number=state.step_number,
        version=state.version,
        inputs=state.inputs,
        entries=state.transcript,
    )
    return render_view(view)
