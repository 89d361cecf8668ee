"""The task view of a call (MCP tasks extension, SEP-2663), read off the call projection.

A task is a call: its id is the call id and its status is derived from the call's events (requested, started,
progress, cancel requested, the outcome), so there is no second source of truth to keep in step. Any gateway replica
reads the same hash, and a restarted gateway loses nothing.
"""

import json
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.call_state import TERMINAL, CallState
from geogate.calls.projections.registry import projector
from geogate.eventlog.append import Op, hset_unless
from schemas.events import Event, ToolInputProvided, ToolInputRequested

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]

CANCELLED = "cancelled"
"""The `tool.failed` code of a job stopped by a cancellation (`workers.jobkit.errors.JobCancelled`)."""
PROTOCOL_FAILURES = frozenset({"job.crashed", "job.timeout", "tool.unknown", "call.attempts_exhausted"})
"""Outcome codes that are not the tool's answer but a failure to produce one: the task ends `failed` with a JSON-RPC
error. Every other `tool.failed` is the tool's own error result: the task ends `completed` with `isError: true`."""


INPUT = "input:"
"""Call-hash field prefix of a pending input request (`input:<key>` = the request as JSON)."""
ANSWER = "answer:"
"""Call-hash field prefix of its answer (`answer:<key>`)."""


@projector("tool.input_requested")
def _input_requested(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolInputRequested)
    fields = {INPUT + key: json.dumps(request, sort_keys=True) for key, request in data.requests.items()}
    return [hset_unless(keys.call(data.call_id), "status", TERMINAL, fields)]


@projector("tool.input_provided")
def _input_provided(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolInputProvided)
    update = {ANSWER + data.key: json.dumps(data.response, sort_keys=True)}
    return [hset_unless(keys.call(data.call_id), "status", TERMINAL, update)]


def inputs(raw: dict[bytes, bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's input requests still unanswered, and the answers given, by key."""
    fields = {k.decode(): v for k, v in raw.items()}
    answers = {k[len(ANSWER) :]: json.loads(v) for k, v in fields.items() if k.startswith(ANSWER)}
    pending = {
        k[len(INPUT) :]: json.loads(v)
        for k, v in fields.items()
        if k.startswith(INPUT) and k[len(INPUT) :] not in answers
    }
    return pending, answers


class TaskView(BaseModel):
    """What `tasks/get` says about a call, without the inlined result."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    actor: str = ""
    input_requests: dict[str, Any] | None = None
    """Only while `input_required`: the unanswered requests by key."""

    def expired(self, ttl_s: float, now: datetime | None = None) -> bool:
        created = datetime.fromisoformat(self.created_at)
        return (now or datetime.now(UTC)) > created + timedelta(seconds=ttl_s)


def task_status(state: CallState) -> TaskStatus:
    if state.status == "succeeded":
        return "completed"
    if state.status == "failed":
        if state.error_code == CANCELLED:
            return "cancelled"
        return "failed" if state.error_code in PROTOCOL_FAILURES else "completed"
    return "working"


def _working(state: CallState, raw: dict[bytes, bytes]) -> str:
    """ "queued", "running", or the job's last progress line (a tiled call's: "7/20 tiles done")."""
    progress = raw.get(b"message", b"").decode()
    if progress:
        return progress
    return "running" if state.status == "running" else "queued"


def task_view(state: CallState, raw: dict[bytes, bytes]) -> TaskView:
    """The task of `state`; `raw` is the same projection hash (for the timestamps `CallState` does not carry)."""
    started = raw.get(b"started_at", b"").decode()
    status = task_status(state)
    message = None
    pending, _ = inputs(raw)
    if status == "working" and pending and not state.cancel:
        status = "input_required"
        message = f"waiting for {len(pending)} input(s)"
    elif status == "working":
        message = "cancel requested" if state.cancel else _working(state, raw)
    elif status == "failed":
        message = state.error_message
    return TaskView(
        task_id=state.call_id,
        status=status,
        status_message=message,
        created_at=state.requested_at,
        last_updated_at=state.finished_at or started or state.requested_at,
        actor=state.actor,
        input_requests=pending if status == "input_required" else None,
    )
