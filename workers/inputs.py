"""A job that asks its client for input (MCP tasks extension): append the requests, wait for every answer.

The requests and answers are events of the call, so a re-dispatched job finds the answers already given, and any
gateway replica shows the task as `input_required` and records the client's `tasks/update`.
"""

import time
from typing import Any

from eventlog import streams
from eventlog.append import Expect
from eventlog.projections.tasks import inputs
from eventlog.publish import new_event
from schemas.events.task import ToolInputRequested
from schemas.ids import call_aggregate
from workers.context import JobContext
from workers.errors import JobCancelled, JobFailed, JobSuperseded

POLL_S = 0.1


def ask(ctx: JobContext, requests: dict[str, dict[str, Any]], timeout_s: float = 3600.0) -> dict[str, Any]:
    """Ask the client `requests` (MRTR input requests by key) and return its answers by key once all are in.

    Raises:
        JobCancelled: the task was cancelled while it waited.
        JobFailed: no answer within `timeout_s` (`input.timeout`).
        JobSuperseded: this attempt lost its lease while it waited.
    """
    store = ctx.store
    assert store is not None and ctx.fence is not None, "ask() runs inside a worker's job"
    call_key = store.live.call(ctx.call_id)
    current = Expect(call_key, "attempt", "in", (ctx.fence.attempt,))
    event = new_event(
        call_aggregate(ctx.call_id),
        ToolInputRequested(call_id=ctx.call_id, requests=requests),
        actor=ctx.actor,
        trace_id=ctx.trace_id or None,
    )
    appended = store.append(event, streams.input_request_key(ctx.call_id, ",".join(sorted(requests))), expect=current)
    if appended.refused:
        raise JobSuperseded(ctx.call_id, ctx.fence.attempt)
    deadline = time.monotonic() + timeout_s
    beat = ctx.settings.heartbeat_s if ctx.settings is not None else 2.0
    last_beat = time.monotonic()
    while time.monotonic() < deadline:
        raw = store.redis.hgetall(call_key)
        _, answers = inputs(raw)
        if all(key in answers for key in requests):
            return {key: answers[key] for key in requests}
        if raw.get(b"cancel") == b"1":
            raise JobCancelled("the task was cancelled while it waited for input")
        if time.monotonic() - last_beat >= beat:  # renews the lease; raises when superseded
            ctx.progress(len(answers), len(requests), "waiting for input")
            last_beat = time.monotonic()
        time.sleep(POLL_S)
    raise JobFailed("input.timeout", f"no answer to {', '.join(sorted(requests))} within {timeout_s:g} s")
