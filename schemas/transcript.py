"""A guided workflow's transcript: its entries as the projection stores them, and the Markdown both sides render
(the gateway serves `workflow://{state_id}` from the projection; workers render the same text from their fold)."""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from schemas.events import (
    Event,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)

WorkflowData = WorkflowStarted | WorkflowThoughtSubmitted | WorkflowAdvanced | WorkflowCompleted | WorkflowExpired
EntryKind = Literal["instruction", "reply", "completed", "expired"]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


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
