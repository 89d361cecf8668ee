"""The workflow-state projection: one hash per run (`…:p:workflow:<state_id>`) and its transcript list.

The hash's `version` field is what appends expect (optimistic concurrency); `saved:<name>` fields hold each saved
variable as JSON. Every value comes from the event, so replay rebuilds the same hash and list.
"""

import json
from typing import Any

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


def _entry(keys: ProjectionKeys, event: Event, data: WorkflowData, kind: str, step: str, text: str) -> Op:
    entry = {"kind": kind, "step": step, "text": text, "version": data.version, "ts": event.ts.isoformat()}
    return Op("RPUSH", transcript_key(keys, data.state_id), (_json(entry),))


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
    entry = _entry(keys, event, data, "instruction", data.step, data.instruction)
    return [hset(workflow_key(keys, data.state_id), fields), entry]


@projector("workflow.thought_submitted")
def _submitted(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.data
    assert isinstance(data, WorkflowThoughtSubmitted)
    fields: dict[str, Arg] = {"version": data.version, "updated_at": event.ts.isoformat(), "pending": data.step}
    if data.save is not None:
        fields[f"saved:{data.save}"] = _json(data.value)
    entry = _entry(keys, event, data, "reply", data.step, data.text)
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
    entry = _entry(keys, event, data, "instruction", data.step, data.instruction)
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
    entry = _entry(keys, event, data, "completed", data.step, data.message)
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
    entry = _entry(keys, event, data, "expired", "", f"expired after {data.idle_s:.0f} s without activity")
    return [hset(workflow_key(keys, data.state_id), fields), entry]
