"""The result-handler projection: one hash per call that carried a handler (`…:p:handler:<id>`), from `handler.*`."""

import json
from typing import Any

from pydantic import BaseModel, JsonValue

from geogate.calls.keys import ProjectionKeys, handler_run
from geogate.calls.projections.registry import expire_finished, projector
from geogate.calls.projections.running import running_value
from geogate.eventlog.append import Op, hset, hset_unless
from schemas.events import Event, HandlerFailed, HandlerStarted, HandlerSucceeded, OutputRef, ToolSucceeded

TERMINAL = ("succeeded", "failed")


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _ref(ref: OutputRef | None) -> str:
    return _json(ref.model_dump(mode="json") if ref else None)


def _count(event: Event, keys: ProjectionKeys) -> Op:
    return Op("HINCRBY", keys.metrics(), (f"events:{event.type}", 1))


@projector("tool.succeeded")
def _in_place(event: Event, keys: ProjectionKeys) -> list[Op]:
    """A handler that the tool's worker runs in place is held by that worker's lease from the tool's outcome on,
    with no attempt yet: a node that dies before `handler.started` leaves it to the reaper, not lost."""
    data = event.payload(ToolSucceeded)
    if not data.handler_lease:
        return []
    entry = running_value(event, lease=data.handler_lease, worker=data.worker, attempt="")
    return [hset(keys.running(), {handler_run(data.call_id): entry})]


@projector("handler.started")
def _started(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(HandlerStarted)
    started_at = event.ts.isoformat()
    update = {"status": "running", "language": data.language, "worker": data.worker, "started_at": started_at}
    update |= {"attempt": data.attempt, "lease": data.lease}
    key = keys.handler(data.call_id)
    entry = running_value(event, lease=data.lease, worker=data.worker, attempt=data.attempt)
    return [
        hset_unless(key, "status", TERMINAL, update),
        Op("HINCRBY", key, ("attempts", 1)),
        _count(event, keys),
        hset(keys.running(), {handler_run(data.call_id): entry}),
    ]


@projector("handler.succeeded")
def _succeeded(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(HandlerSucceeded)
    update = {
        "status": "succeeded",
        "finished_at": event.ts.isoformat(),
        "value": _json(data.value),
        "value_ref": _ref(data.value_ref),
        "value_bytes": data.value_bytes,
        "raw": _ref(data.raw),
        "language": data.language,
        "isolation": data.isolation,
        "duration_ms": repr(data.duration_ms),
    }
    ops = [hset(keys.handler(data.call_id), update), _count(event, keys), _not_running(data.call_id, keys)]
    return [*ops, *_expire(event, keys, data.call_id)]


def _expire(event: Event, keys: ProjectionKeys, call_id: str) -> list[Op]:
    """The handler's outcome is the call's last event: its keys expire from here."""
    return expire_finished(event, keys, keys.call(call_id), keys.handler(call_id))


def _not_running(call_id: str, keys: ProjectionKeys) -> Op:
    return Op("HDEL", keys.running(), (handler_run(call_id),))


@projector("handler.failed")
def _failed(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(HandlerFailed)
    update = {
        "status": "failed",
        "finished_at": event.ts.isoformat(),
        "error": _json(data.model_dump(mode="json", include={"code", "message", "line", "column", "exc_type"})),
        "raw": _ref(data.raw),
        "language": data.language,
        "duration_ms": repr(data.duration_ms),
    }
    ops = [hset(keys.handler(data.call_id), update), _count(event, keys), _not_running(data.call_id, keys)]
    return [*ops, Op("HINCRBY", keys.metrics(), (f"failed:{data.code}", 1)), *_expire(event, keys, data.call_id)]


class HandlerState(BaseModel):
    """A handler run as the projection knows it: what a duplicate call or a missed wake-up is answered from."""

    call_id: str
    status: str
    language: str = ""
    value: JsonValue = None
    value_ref: OutputRef | None = None
    value_bytes: int = 0
    raw: OutputRef | None = None
    error: dict[str, JsonValue] | None = None
    duration_ms: float = 0.0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_hash(cls, call_id: str, raw: dict[bytes, bytes]) -> "HandlerState | None":
        """Parse the hash as read from Redis; None when the call has no handler run yet."""
        if not raw:
            return None
        h = {k.decode(): v.decode() for k, v in raw.items()}
        return cls(
            call_id=call_id,
            status=h.get("status", "unknown"),
            language=h.get("language", ""),
            value=json.loads(h.get("value", "null")),
            value_ref=json.loads(h.get("value_ref", "null")),
            value_bytes=int(h.get("value_bytes", "0")),
            raw=json.loads(h.get("raw", "null")),
            error=json.loads(h.get("error", "null")),
            duration_ms=float(h.get("duration_ms", "0")),
        )
