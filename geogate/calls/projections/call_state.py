"""The call-status projection: one hash per call (`…:p:call:<id>`) folded from the `tool.*` events."""

import json
from typing import Any

from pydantic import BaseModel, Field, JsonValue

from geogate.calls.keys import ProjectionKeys, handler_run
from geogate.calls.projections.registry import expire_finished, projector
from geogate.calls.projections.running import running_value
from geogate.eventlog.append import Op, hset, hset_unless
from schemas.content import ContentBlock
from schemas.events import (
    Event,
    OutputRef,
    ToolCancelRequested,
    ToolFailed,
    ToolProgress,
    ToolRedispatched,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)

TERMINAL = ("succeeded", "failed")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@projector("tool.requested")
def _requested(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolRequested)
    return [
        hset(
            keys.call(data.call_id),
            {
                "status": "requested",
                "tool": data.tool,
                "queue": data.queue,
                "actor": event.actor,
                "trace_id": event.trace_id,
                "requested_at": event.ts.isoformat(),
                "args": _json(data.args),
                "timeout_s": repr(data.timeout_s),
                "dispatch": "1",
            },
        )
    ]


@projector("tool.started")
def _started(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolStarted)
    key = keys.call(data.call_id)
    update = {
        "status": "running",
        "started_at": event.ts.isoformat(),
        "worker": data.worker,
        "attempt": data.attempt,
        "lease": data.lease,
    }
    entry = running_value(event, lease=data.lease, worker=data.worker, attempt=data.attempt)
    return [
        hset_unless(key, "status", TERMINAL, update),
        Op("HINCRBY", key, ("attempts", 1)),
        hset(keys.running(), {data.call_id: entry}),
    ]


@projector("tool.progress")
def _progress(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolProgress)
    update = {"progress": repr(data.progress), "total": _json(data.total), "message": data.message or ""}
    return [hset_unless(keys.call(data.call_id), "status", TERMINAL, update)]


@projector("tool.succeeded")
def _succeeded(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolSucceeded)
    ref = data.output_ref.model_dump(mode="json") if data.output_ref else None
    update = {
        "status": "succeeded",
        "finished_at": event.ts.isoformat(),
        "result": _json(data.result),
        "text": data.text,
        "output_ref": _json(ref),
        "duration_ms": repr(data.duration_ms),
    }
    if data.content:  # only calls that returned media carry the field
        update["content"] = _json([block.model_dump(mode="json") for block in data.content])
    ops = [hset(keys.call(data.call_id), update), Op("HDEL", keys.running(), (data.call_id,))]
    return [*ops, *expire_finished(event, keys, keys.call(data.call_id), keys.handler(data.call_id))]


@projector("tool.failed")
def _failed(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolFailed)
    update = {
        "status": "failed",
        "finished_at": event.ts.isoformat(),
        "error_code": data.code,
        "error_message": data.message,
        "error_field": data.field or "",
        "retryable": "1" if data.retryable else "0",
        "duration_ms": repr(data.duration_ms),
    }
    ops = [hset(keys.call(data.call_id), update), Op("HDEL", keys.running(), (data.call_id,))]
    return [*ops, *expire_finished(event, keys, keys.call(data.call_id))]


@projector("tool.redispatched")
def _redispatched(event: Event, keys: ProjectionKeys) -> list[Op]:
    """The lost run leaves the running index and waits on its queue again; its attempt is no longer current."""
    data = event.payload(ToolRedispatched)
    if data.stage == "fan_in":
        return []  # the tiles' projection keeps the parent's fan-in run
    if data.stage == "handler":
        key = keys.handler(data.call_id)
        not_running = Op("HDEL", keys.running(), (handler_run(data.call_id),))
        return [hset(key, {"status": "requested", "attempt": ""}), not_running]
    key = keys.call(data.call_id)
    update = {"status": "requested", "attempt": "", "lease": "", "dispatch": str(data.dispatch)}
    return [hset(key, update), Op("HINCRBY", key, ("redispatches", 1)), Op("HDEL", keys.running(), (data.call_id,))]


@projector("tool.cancel_requested")
def _cancel(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolCancelRequested)
    return [hset(keys.call(data.call_id), {"cancel": "1", "cancel_reason": data.reason})]


class CallState(BaseModel):
    """A call as the projection knows it; what `tasks/get`, `/ops` and timeouts read."""

    call_id: str
    status: str
    tool: str
    actor: str = ""
    trace_id: str = ""
    attempts: int = 0
    worker: str = ""
    attempt: str = ""
    """The current attempt (the only one whose appends are accepted); "" while queued."""
    lease: str = ""
    dispatch: int = 1
    redispatches: int = 0
    cancel: bool = False
    result: JsonValue = None
    text: str = ""
    content: list[ContentBlock] = Field(default_factory=list)
    output_ref: OutputRef | None = None
    error_code: str = ""
    error_message: str = ""
    error_field: str = ""
    requested_at: str = ""
    finished_at: str = ""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_hash(cls, call_id: str, raw: dict[bytes, bytes]) -> "CallState | None":
        if not raw:
            return None
        h = {k.decode(): v.decode() for k, v in raw.items()}
        ref = json.loads(h.get("output_ref", "null"))
        return cls(
            call_id=call_id,
            status=h.get("status", "unknown"),
            tool=h.get("tool", ""),
            actor=h.get("actor", ""),
            trace_id=h.get("trace_id", ""),
            attempts=int(h.get("attempts", "0")),
            worker=h.get("worker", ""),
            attempt=h.get("attempt", ""),
            lease=h.get("lease", ""),
            dispatch=int(h.get("dispatch", "1")),
            redispatches=int(h.get("redispatches", "0")),
            cancel=h.get("cancel") == "1",
            result=json.loads(h.get("result", "null")),
            text=h.get("text", ""),
            content=json.loads(h.get("content", "[]")),
            output_ref=OutputRef.model_validate(ref) if ref else None,
            error_code=h.get("error_code", ""),
            error_message=h.get("error_message", ""),
            error_field=h.get("error_field", ""),
            requested_at=h.get("requested_at", ""),
            finished_at=h.get("finished_at", ""),
        )
