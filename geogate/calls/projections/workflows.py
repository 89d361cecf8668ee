"""The workflow-state projection: one hash per run (`…:p:workflow:<state_id>`), its transcript list, whose
entries and Markdown rendering are `schemas.transcript` (the gateway and workers render the same text).

The hash's `version` field is what appends expect (optimistic concurrency); `saved:<name>` fields hold each saved
variable as JSON. Every value comes from the event, so replay rebuilds the same hash and list.
"""

import json
from typing import Any

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.registry import projector
from geogate.eventlog.append import Arg, Op, hset
from schemas.events import (
    Event,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.transcript import EntryKind, TranscriptEntry, WorkflowData, expired_text


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _entry(keys: ProjectionKeys, event: Event, data: WorkflowData, kind: EntryKind, text: str) -> Op:
    entry = TranscriptEntry.of(event, data, kind, text)
    return Op("RPUSH", keys.transcript(data.state_id), (entry.to_json(),))


@projector("workflow.started")
def _started(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(WorkflowStarted)
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
    return [hset(keys.workflow(data.state_id), fields), entry]


@projector("workflow.thought_submitted")
def _submitted(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(WorkflowThoughtSubmitted)
    fields: dict[str, Arg] = {"version": data.version, "updated_at": event.ts.isoformat(), "pending": data.step}
    if data.save is not None:
        fields[f"saved:{data.save}"] = _json(data.value)
    entry = _entry(keys, event, data, "reply", data.text)
    return [hset(keys.workflow(data.state_id), fields), entry]


@projector("workflow.advanced")
def _advanced(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(WorkflowAdvanced)
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
    return [hset(keys.workflow(data.state_id), fields), entry]


@projector("workflow.completed")
def _completed(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(WorkflowCompleted)
    fields: dict[str, Arg] = {
        "status": "completed",
        "version": data.version,
        "message": data.message,
        "pending": "",
        "updated_at": event.ts.isoformat(),
        "finished_at": event.ts.isoformat(),
    }
    entry = _entry(keys, event, data, "completed", data.message)
    return [hset(keys.workflow(data.state_id), fields), entry]


@projector("workflow.expired")
def _expired(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(WorkflowExpired)
    fields: dict[str, Arg] = {
        "status": "expired",
        "version": data.version,
        "pending": "",
        "updated_at": event.ts.isoformat(),
        "finished_at": event.ts.isoformat(),
    }
    entry = _entry(keys, event, data, "expired", expired_text(data.idle_s))
    return [hset(keys.workflow(data.state_id), fields), entry]
