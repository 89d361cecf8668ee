"""Calling a tool through the log from synchronous code (LLM loop, result-handler chaining): publish, then wait.

The call takes the same path as a client's: validated arguments, `tool.requested` appended together with its queue
message, a worker runs it, and its outcome is read back from the calls stream.
"""

import time
from collections.abc import Callable

from pydantic import JsonValue

from eventlog import streams
from eventlog.errors import EventLogError
from eventlog.preflight import enforce
from eventlog.publish import enqueue_op, new_event, request_event
from eventlog.settings import Settings
from eventlog.store import EventStore, parse_entries
from schemas.events import Event, ToolFailed
from schemas.ids import call_aggregate, new_id
from schemas.scopes import spec_scope
from schemas.tools import ToolSpec
from schemas.validation import validate

OUTCOMES = (b"tool.succeeded", b"tool.failed")


def _default_ttl(domain: str) -> float:
    return float(Settings.model_fields["justification_default_ttl_s"].default)


class CallTimedOut(EventLogError, TimeoutError):
    """The called tool did not finish in time; `call_id` names it in the log."""

    code = "call.timeout"

    def __init__(self, call_id: str, timeout_s: float) -> None:
        super().__init__(f"call {call_id} did not finish within {timeout_s:g} s")
        self.call_id = call_id


def call_and_wait(
    store: EventStore,
    spec: ToolSpec,
    arguments: dict[str, JsonValue],
    *,
    actor: str,
    timeout_s: float,
    trace_id: str | None = None,
    causation_id: str | None = None,
    justification_ttl: Callable[[str], float] | None = None,
) -> Event:
    """Publish a call to `spec` and return its outcome event (`tool.succeeded` or `tool.failed`).

    Raises:
        schemas.validation.ArgumentsInvalid: the arguments do not fit the tool (nothing is published).
        CallTimedOut: no outcome within `timeout_s`.
        PreflightMissing: a gated tool lacks a justification (its hashes are issued; nothing else is published).
    """
    valid = validate(spec, arguments)
    if (refused := _outside_scopes(store, spec, actor)) is not None:
        return refused
    justified_by = enforce(store, spec, valid.args, actor, justification_ttl or _default_ttl)
    call_id = new_id()
    event = request_event(
        spec,
        valid.args,
        call_id=call_id,
        actor=actor,
        trace_id=trace_id,
        causation_id=causation_id,
        timeout_s=timeout_s,
        justified_by=justified_by,
    )
    appended = store.append(event, streams.requested_key(call_id), effects=[enqueue_op(event)])
    return wait_for_outcome(store, call_id, after=appended.entry_id, timeout_s=timeout_s)


def _outside_scopes(store: EventStore, spec: ToolSpec, actor: str) -> Event | None:
    """A `tool.failed` (never appended) when the actor's token could not make this call itself (issue 14).

    The gateway records the scopes of a client whose call delegates tool calls (`ask`, result handlers); without
    a record (authentication off) nothing is restricted.
    """
    raw = store.redis.get(store.keys.client_scopes(actor))
    needed = spec_scope(spec)
    if raw is None or needed in raw.decode().split(","):
        return None
    call_id = new_id()
    message = f"{actor} may not call {spec.name}: it needs the scope {needed!r}, which the client's token lacks"
    return new_event(
        call_aggregate(call_id),
        ToolFailed(call_id=call_id, code="auth.insufficient_scope", message=message),
        actor=actor,
    )


def wait_for_outcome(store: EventStore, call_id: str, *, after: str, timeout_s: float) -> Event:
    """Block on the calls stream from `after` until the call's outcome arrives.

    Raises:
        CallTimedOut: no outcome within `timeout_s`.
    """
    stream, aggregate = store.keys.stream("calls"), call_aggregate(call_id).encode()
    deadline = time.monotonic() + timeout_s
    cursor = after
    while (left := deadline - time.monotonic()) > 0:
        reply = store.redis.xread({stream: cursor}, count=200, block=max(1, int(left * 1000))) or []
        for _name, entries in reply:
            cursor = entries[-1][0].decode()
            mine = [e for e in entries if e[1][b"aggregate"] == aggregate and e[1][b"type"] in OUTCOMES]
            if mine:
                return parse_entries(stream, mine[:1])[0].event
    raise CallTimedOut(call_id, timeout_s)
