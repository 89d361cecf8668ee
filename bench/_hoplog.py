"""The event log's writes for bench/hop.py's logged hop (`HOP_LOG=1`), with nothing of Geogate's around them.

A Geogate call appends three events: `tool.requested` (with the task's queue message, in one step), a fenced
`tool.started` and a fenced outcome, and the gateway learns the outcome from the log. Here each of those is one run
of Geogate's own append script (`geogate/eventlog/_append.lua`: dedupe key, aggregate index, expectations, the
call's state hash) with the expectations Geogate's worker sets, and the event is a small msgpack map: no pydantic
events, no call plan, no gate, no projections, no leases. What an event-sourced call behind one queue hop costs at
the least.
"""

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgpack
import redis
import redis.asyncio as aredis

from geogate.eventlog.append import SCRIPT, Expect, Op, ScriptCall, hset, script_call

STREAM = "hop:log:calls"
TERMINAL = ("succeeded", "failed", "cancelled")
MAX_ATTEMPTS = 3
DEDUPE_TTL_S = 86_400

Plan = tuple[Sequence[Expect], Sequence[Op]]


def call_key(token: str) -> str:
    return f"hop:call:{token}"


def requested(token: str, queue: str, message: bytes) -> Plan:
    """The request and its queue message in one step; the call's state starts at `requested`, dispatch 1."""
    return [], [hset(call_key(token), {"status": "requested", "dispatch": 1}), Op("LPUSH", queue, (message,))]


def started(token: str, attempt: str) -> Plan:
    """Fenced as Geogate's worker fences a start: not ended, the current dispatch, attempts left."""
    key = call_key(token)
    expect = [
        Expect(key, "status", "not_in", TERMINAL),
        Expect(key, "dispatch", "in", ("1", "")),
        Expect(key, "attempts", "lt", (str(MAX_ATTEMPTS),)),
    ]
    return expect, [hset(key, {"status": "started", "attempt": attempt}), Op("HINCRBY", key, ("attempts", 1))]


def succeeded(token: str, attempt: str) -> Plan:
    """Accepted only from the current attempt."""
    key = call_key(token)
    return [Expect(key, "attempt", "in", (attempt,))], [hset(key, {"status": "succeeded"})]


def layout(token: str, kind: str, body: dict[str, Any], plan: Plan) -> ScriptCall:
    dedupe = f"hop:dedupe:{token}:{kind}:{body.get('attempt', '')}"  # a start per attempt, one of each other kind
    event = msgpack.packb({"type": kind, "call_id": token, "ts": time.time(), **body}, use_bin_type=True)
    fields = ["type", kind, "aggregate", f"call:{token}", "dedupe", dedupe, "event", event]
    expect, ops = plan
    return script_call(
        mode="append",
        stream=STREAM,
        dedupe=dedupe,
        index=f"hop:agg:{token}",
        fields=fields,
        ops=ops,
        ttl=DEDUPE_TTL_S,
        expect=expect,
    )


def appender(client: redis.Redis) -> Callable[[str, str, dict[str, Any], Plan], int]:
    """`append(token, kind, body, plan)` → the script's status (1 appended, 0 duplicate, -1 refused)."""
    script = client.register_script(SCRIPT)

    def append(token: str, kind: str, body: dict[str, Any], plan: Plan) -> int:
        call = layout(token, kind, body, plan)
        return int(script(keys=call.keys, args=call.args)[0])

    return append


def async_appender(client: aredis.Redis) -> Callable[[str, str, dict[str, Any], Plan], Awaitable[int]]:
    script = client.register_script(SCRIPT)

    async def append(token: str, kind: str, body: dict[str, Any], plan: Plan) -> int:
        call = layout(token, kind, body, plan)
        return int((await script(keys=call.keys, args=call.args))[0])

    return append


def outcome(fields: dict[bytes, bytes]) -> tuple[str, Any] | None:
    """(token, result) of a log entry that is a call's outcome; None for any other entry."""
    if fields[b"type"] != b"tool.succeeded":
        return None
    event = msgpack.unpackb(fields[b"event"], raw=False)
    return event["call_id"], event["result"]
