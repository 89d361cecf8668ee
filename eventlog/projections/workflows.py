"""The workflow-state projection: one hash per run (`…:p:workflow:<state_id>`), its transcript list, and the
transcript rendered from them (the gateway serves `workflow://{state_id}` from here without importing workers).

The hash's `version` field is what appends expect (optimistic concurrency); `saved:<name>` fields hold each saved
variable as JSON. Every value comes from the event, so replay rebuilds the same hash and list.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from eventlog.append import Arg, Op, hset
from eventlog.projections import projector
from eventlog.streams import ProjectionKeys
from schemas.events import (
    Event,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)


def workflow_key(keys: ProjectionKeys, state_id: str) -> str:
    """The hash of one run."""
    return keys.key("workflow", state_id)


def transcript_key(keys: ProjectionKeys, state_id: str) -> str:
    """The list of one run's transcript entries (JSON objects, in log order)."""
    return keys.key("workflow", state_id, "transcript")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


WorkflowData = WorkflowStarted | WorkflowThoughtSubmitted | WorkflowAdvanced | WorkflowCompleted | WorkflowExpired
EntryKind = Literal["instruction", "reply", "completed", "expired"]


def expired_text(idle_s: float) -> str:
    """The transcript text of `workflow.expired` (one spelling for fold and projection)."""
    return f"expired after {idle_s:.0f} s without activity"


@dataclass(frozen=True)
class TranscriptEntry:
    """One transcript line: an instruction given, a reply received, or the end of the run."""

    kind: EntryKind
    step: str
    text: str
    version: int
    ts: str
    """ISO 8601 time of the event."""

    @classmethod
    def of(cls, event: Event, data: WorkflowData, kind: EntryKind, text: str) -> "TranscriptEntry":
        """The entry a workflow event adds."""
        return cls(kind, data.step, text, data.version, event.ts.isoformat())

    def to_json(self) -> str:
        """The entry as stored in the transcript list."""
        return _json({"kind": self.kind, "step": self.step, "text": self.text, "version": self.version, "ts": self.ts})


def _entry(keys: ProjectionKeys, event: Event, data: WorkflowData, kind: EntryKind, text: str) -> Op:
    entry = TranscriptEntry.of(event, data, kind, text)
    return Op("RPUSH", transcript_key(keys, data.state_id), (entry.to_json(),))


@projector("workflow.started")
def _started(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.data
    assert isinstance(data, WorkflowStarted)
    fields: dict[str, Arg] = {
        "state_id": data.state_id,
        "workflow": data.workflow,
        "status": "active",
        "version": data.version,
        "step": data.step,
        "step_number": data.step_number,
        "instruction": data.instruction,
        "inputs": _json(data.inputs),
        "ttl_s": repr(data.ttl_s),
        "actor": event.actor,
        "started_at": event.ts.isoformat(),
        "updated_at": event.ts.isoformat(),
        "expires_at": data.expires_at.isoformat(),
        "definition_sha256": data.definition_sha256,
    }
    entry = _entry(keys, event, data, "instruction", data.instruction)
    return [hset(workflow_key(keys, data.state_id), fields), entry]


@projector("workflow.thought_submitted")
def _submitted(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.data
    assert isinstance(data, WorkflowThoughtSubmitted)
    fields: dict[str, Arg] = {"version": data.version, "updated_at": event.ts.isoformat(), "pending": data.step}
    if data.save is not None:
        fields[f"saved:{data.save}"] = _json(data.value)
    entry = _entry(keys, event, data, "reply", data.text)
    return [hset(workflow_key(keys, data.state_id), fields), entry]


@projector("workflow.advanced")
def _advanced(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.data
    assert isinstance(data, WorkflowAdvanced)
    fields: dict[str, Arg] = {
        "version": data.version,
        "step": data.step,
        "step_number": data.step_number,
        "instruction": data.instruction,
        "pending": "",
        "updated_at": event.ts.isoformat(),
        "expires_at": data.expires_at.isoformat(),
    }
    entry = _entry(keys, event, data, "instruction", data.instruction)
    return [hset(workflow_key(keys, data.state_id), fields), entry]


@projector("workflow.completed")
def _completed(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.data
    assert isinstance(data, WorkflowCompleted)
    fields: dict[str, Arg] = {
        "status": "completed",
        "version": data.version,
        "message": data.message,
        "pending": "",
        "updated_at": event.ts.isoformat(),
        "finished_at": event.ts.isoformat(),
    }
    entry = _entry(keys, event, data, "completed", data.message)
    return [hset(workflow_key(keys, data.state_id), fields), entry]


@projector("workflow.expired")
def _expired(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.data
    assert isinstance(data, WorkflowExpired)
    fields: dict[str, Arg] = {
        "status": "expired",
        "version": data.version,
        "pending": "",
        "updated_at": event.ts.isoformat(),
        "finished_at": event.ts.isoformat(),
    }
    entry = _entry(keys, event, data, "expired", expired_text(data.idle_s))
    return [hset(workflow_key(keys, data.state_id), fields), entry]


@dataclass(frozen=True)
class TranscriptView:
    """What a transcript shows: the run's header fields and its entries."""

    state_id: str
    workflow: str
    status: str
    step: str
    step_number: int
    version: int
    inputs: Mapping[str, Any]
    entries: Sequence[TranscriptEntry]

    @classmethod
    def from_redis(
        cls, fields: Mapping[bytes | str, bytes | str], entries: Sequence[bytes | str]
    ) -> "TranscriptView | None":
        """Read the projection (`HGETALL workflow_key`, `LRANGE transcript_key 0 -1`); None when the run is unknown."""
        if not fields:
            return None
        h = {_text(k): _text(v) for k, v in fields.items()}
        return cls(
            state_id=h["state_id"],
            workflow=h["workflow"],
            status=h["status"],
            step=h["step"],
            step_number=int(h["step_number"]),
            version=int(h["version"]),
            inputs=json.loads(h.get("inputs", "{}")),
            entries=[TranscriptEntry(**json.loads(raw)) for raw in entries],
        )


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


_HEADINGS: dict[str, str] = {
    "instruction": "## Instruction for step {step!r} (v{version}, {ts})",
    "reply": "## Reply to step {step!r} (v{version}, {ts})",
    "completed": "## Completed (v{version}, {ts})",
    "expired": "## Expired (v{version}, {ts})",
}


def _entry_lines(entry: TranscriptEntry) -> list[str]:
    heading = _HEADINGS[entry.kind].format(step=entry.step, version=entry.version, ts=entry.ts[:19])
    body = entry.text.rstrip("\n").splitlines() or [""]
    return [heading, "", *(f"> {line}" if entry.kind == "reply" else line for line in body), ""]


def render_transcript(view: TranscriptView) -> str:
    """The run as Markdown, for the `workflow://{state_id}` resource: header, inputs, every instruction and reply."""
    inputs = [f"- {name}: {_value_text(value)}" for name, value in sorted(view.inputs.items())] or ["- (none)"]
    lines = [
        f"# Workflow {view.workflow} ({view.state_id})",
        "",
        f"Status: {view.status}; step {view.step_number} {view.step!r}; version {view.version}.",
        "",
        "Inputs:",
        *inputs,
        "",
    ]
    for entry in view.entries:
        lines += _entry_lines(entry)
    return "\n".join(lines).rstrip("\n") + "\n"
