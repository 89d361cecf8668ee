"""A job talking to its client through the log: `ask_client` appends its questions and waits for every answer, `tell`
appends a log line for the client.

Questions and answers are events of the call (`tool.input_requested`, `tool.input_provided`), so a re-dispatched job
finds the answers already given. Whoever serves the client delivers them: the tasks extension (`tasks/get`,
`tasks/update`, any gateway replica) when the call is a task, otherwise the gateway that waits for the call (MRTR
`input_required` on 2026-07-28, a request over the session on 2025-11-25).
"""

import itertools
import time
from typing import Any

from geogate.calls import keys
from geogate.calls.projections.tasks import inputs
from geogate.calls.publish import new_event
from geogate.eventlog.append import Expect
from schemas.events.task import ToolInputRequested
from schemas.events.tool import LogLevel, ToolLogged
from schemas.ids import call_aggregate
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled, JobFailed, JobSuperseded

POLL_S = 0.1
NEEDS = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
"""The client capability each kind of question needs."""


def ask_client(ctx: JobContext, requests: dict[str, dict[str, Any]], timeout_s: float = 3600.0) -> dict[str, Any]:
    """Ask the client `requests` (MRTR input requests by key) and return its answers by key once all are in.

    Each question of a call needs its own key: a key asked again returns the answer it already has.

    Raises:
        JobFailed: the client cannot answer one of the questions (`input.unsupported`, it did not declare the
            capability), or no answer came within `timeout_s` (`input.timeout`).
        JobCancelled: the call was cancelled while it waited.
        JobSuperseded: this attempt lost its lease while it waited.
    """
    _check_answerable(ctx, requests)
    store = ctx.store
    assert store is not None and ctx.fence is not None, "ask_client() runs inside a worker's job"
    call_key = store.live.call(ctx.call_id)
    event = new_event(
        call_aggregate(ctx.call_id),
        ToolInputRequested(call_id=ctx.call_id, requests=requests),
        actor=ctx.actor,
        trace_id=ctx.trace_id or None,
    )
    dedupe = keys.input_request_key(ctx.call_id, ",".join(sorted(requests)))
    if store.append(event, dedupe, expect=_current(ctx, call_key)).refused:
        raise JobSuperseded(ctx.call_id, ctx.fence.attempt)
    return _wait_for_answers(ctx, call_key, requests, timeout_s)


def _check_answerable(ctx: JobContext, requests: dict[str, dict[str, Any]]) -> None:
    for key, request in requests.items():
        needed = NEEDS.get(str(request.get("method")))
        if needed is None or needed not in ctx.client_capabilities:
            message = f"the client cannot answer {key!r}: it did not declare {needed or request.get('method')!r}"
            raise JobFailed("input.unsupported", message)


def _wait_for_answers(
    ctx: JobContext, call_key: str, requests: dict[str, dict[str, Any]], timeout_s: float
) -> dict[str, Any]:
    store = ctx.store
    assert store is not None
    deadline = time.monotonic() + timeout_s
    beat = ctx.settings.heartbeat_s if ctx.settings is not None else 2.0
    last_beat = time.monotonic()
    while time.monotonic() < deadline:
        raw = store.redis.hgetall(call_key)
        _, answers = inputs(raw)
        if all(key in answers for key in requests):
            return {key: answers[key] for key in requests}
        if raw.get(b"cancel") == b"1":
            raise JobCancelled("the call was cancelled while it waited for input")
        if time.monotonic() - last_beat >= beat:  # renews the lease; raises when superseded
            ctx.progress(len(answers), len(requests), "waiting for input")
            last_beat = time.monotonic()
        time.sleep(POLL_S)
    raise JobFailed("input.timeout", f"no answer to {', '.join(sorted(requests))} within {timeout_s:g} s")


def tell(ctx: JobContext, message: str, level: LogLevel = "info") -> None:
    """Append a log line for the client (`tool.logged`); the gateway waiting for the call relays it.

    Raises:
        JobSuperseded: this attempt is no longer the call's current one.
    """
    store = ctx.store
    assert store is not None and ctx.fence is not None, "tell() runs inside a worker's job"
    seq = next(_sequence(ctx))
    event = new_event(
        call_aggregate(ctx.call_id),
        ToolLogged(call_id=ctx.call_id, level=level, message=message[:2000]),
        actor=ctx.actor,
        trace_id=ctx.trace_id or None,
    )
    key = keys.logged_key(ctx.call_id, ctx.fence.attempt, seq)
    if store.append(event, key, expect=_current(ctx, store.live.call(ctx.call_id))).refused:
        raise JobSuperseded(ctx.call_id, ctx.fence.attempt)


def _current(ctx: JobContext, call_key: str) -> Expect:
    assert ctx.fence is not None
    return Expect(call_key, "attempt", "in", (ctx.fence.attempt,))


def _sequence(ctx: JobContext) -> "itertools.count[int]":
    counter = ctx.extra.setdefault("logged", itertools.count(1))
    assert isinstance(counter, itertools.count)
    return counter
