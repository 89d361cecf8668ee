"""The `run_result_handler` job (queue `sandbox`): run a call's handler over its raw output, append `handler.*`.

The runner enqueues this job in the same atomic append as the call's `tool.succeeded` (see `handler_job_op`), so
a crash between the two cannot lose the handler. The job re-reads the call from the log (handler, raw output
reference, actor), appends `handler.started`, runs the handler and appends `handler.succeeded` or
`handler.failed`; both appends are keyed, so a redelivered job never appends a second outcome.
"""

import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from celery.signals import worker_process_init

from eventlog import streams
from eventlog.append import Expect
from eventlog.calls import call_and_wait
from eventlog.errors import BlobMissing
from eventlog.projections.handlers import TERMINAL, handler_key
from eventlog.publish import follow
from eventlog.reaper import handler_attempts_exhausted
from eventlog.store import EventStore
from schemas.events import (
    Event,
    HandlerFailed,
    HandlerStarted,
    HandlerSucceeded,
    OutputRef,
    ToolFailed,
    ToolRequested,
    ToolSucceeded,
)
from schemas.handlers import HandlerLimits, HandlerOutcome, ResultHandler
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from schemas.tools.handlers import RUN_RESULT_HANDLER, RunResultHandlerArgs, RunResultHandlerResult
from workers.context import JobContext
from workers.errors import JobFailed
from workers.jobs import job
from workers.sandbox.bridge import CallTool
from workers.sandbox.errors import SandboxUnavailable
from workers.sandbox.isolation import SandboxConfig
from workers.sandbox.python import get_sandbox
from workers.sandbox.run import run_handler

logger = logging.getLogger(__name__)

LIMITS = HandlerLimits()
"""Limits of every handler run (CPU, memory, wall clock, output, chained-call budget)."""


@dataclass(frozen=True)
class _Call:
    """What the job needs of the call it follows, read back from the log."""

    requested: Event
    succeeded: Event

    @property
    def handler(self) -> ResultHandler:
        return ResultHandler.model_validate(self.requested.payload(ToolRequested).result_handler)

    @property
    def tool(self) -> str:
        return self.requested.payload(ToolRequested).tool


@job(RUN_RESULT_HANDLER.name)
def run_result_handler(args: RunResultHandlerArgs, ctx: JobContext) -> RunResultHandlerResult:
    """Run the handler of call `args.call_id` and append its events; a redelivery after the outcome does nothing."""
    store = ctx.store
    assert store is not None and ctx.settings is not None, "the runner passes the store and settings"
    call = _read_call(store, args.call_id)
    if call is None:
        logger.warning("call %s has no successful tool run with a handler; nothing to do", args.call_id)
        return RunResultHandlerResult(call_id=args.call_id, status="skipped")
    data = HandlerStarted(
        call_id=args.call_id,
        language=call.handler.language,
        worker=ctx.worker,
        attempt=new_id(),
        queue_wait_ms=_ms_since(call.succeeded.ts),
        lease=ctx.lease,
    )
    state = handler_key(store.live, args.call_id)
    may_start = [
        Expect(state, "status", "not_in", TERMINAL),
        Expect(state, "attempts", "lt", (str(ctx.settings.max_attempts),)),
    ]
    started = store.append(
        follow(call.succeeded, data), streams.handler_started_key(args.call_id, data.attempt), expect=may_start
    )
    if started.refused:  # redelivered after the outcome, or its workers kept dying
        if started.failed == 2:
            failed = handler_attempts_exhausted(args.call_id, store.hash_strings(state), ctx.settings.max_attempts)
            store.append(follow(call.succeeded, failed), streams.handler_outcome_key(args.call_id))
        return RunResultHandlerResult(call_id=args.call_id, status="duplicate")
    outcome = _run(call, ctx, store)
    current = Expect(state, "attempt", "in", (data.attempt,))
    store.append(follow(call.succeeded, outcome), streams.handler_outcome_key(args.call_id), expect=current)
    return RunResultHandlerResult(call_id=args.call_id, status=outcome.type.split(".")[1])


def _read_call(store: EventStore, call_id: str) -> _Call | None:
    events = store.read_aggregate(call_aggregate(call_id))
    requested = next((e for e in events if isinstance(e.data, ToolRequested)), None)
    succeeded = next((e for e in events if isinstance(e.data, ToolSucceeded)), None)
    if requested is None or succeeded is None or requested.payload(ToolRequested).result_handler is None:
        return None
    return _Call(requested, succeeded)


def _run(call: _Call, ctx: JobContext, store: EventStore) -> HandlerSucceeded | HandlerFailed:
    handler, began = call.handler, time.perf_counter()
    succeeded = call.succeeded.data
    assert isinstance(succeeded, ToolSucceeded) and ctx.settings is not None
    raw = succeeded.output_ref or store.put_blob(_compact(succeeded.result), ctx.settings.blob_ttl_s)
    base = {"call_id": succeeded.call_id, "language": handler.language, "worker": ctx.worker}
    try:
        output = json.loads(store.get_blob(raw)) if succeeded.output_ref else succeeded.result
        outcome = _execute(handler, output, call, ctx)
    except BlobMissing:
        return HandlerFailed(**base, code="handler.raw_missing", message="the raw output has expired", raw=raw)
    except SandboxUnavailable as exc:
        ms = _elapsed_ms(began)
        return HandlerFailed(**base, code=exc.code, message=exc.message, retryable=True, raw=raw, duration_ms=ms)
    except Exception:  # top of the job: any crash becomes handler.failed, the trace stays in the worker log
        logger.exception("handler of call %s crashed on the host", base["call_id"])
        message = "the handler run crashed on the worker; see its log"
        return HandlerFailed(**base, code="handler.crashed", message=message, raw=raw, duration_ms=_elapsed_ms(began))
    return _outcome_event(outcome, raw, store, ctx, base)


def _execute(handler: ResultHandler, output: Any, call: _Call, ctx: JobContext) -> HandlerOutcome:
    if handler.language == "jmespath":
        return run_handler(handler, output, limits=LIMITS)
    # Building the chaining bridge compiles every allowed tool's schema (~7 ms): only for scripts that name `tools`.
    chained = "tools" in handler.source
    return run_handler(
        handler,
        output,
        limits=LIMITS,
        call_tool=_call_tool(ctx, call) if chained else None,
        tool_schemas=chainable(call.tool) if chained else None,
        sandbox=get_sandbox(SandboxConfig(allow_weak=ctx.settings.security.sandbox_allow_weak)),
    )


def _outcome_event(
    outcome: HandlerOutcome, raw: OutputRef, store: EventStore, ctx: JobContext, base: dict[str, Any]
) -> HandlerSucceeded | HandlerFailed:
    run = {"duration_ms": round(outcome.duration_ms, 3), "tool_calls": outcome.tool_calls, "stdout": outcome.stdout}
    if outcome.error is not None:
        error = outcome.error.model_dump(include={"code", "message", "line", "column", "exc_type"})
        return HandlerFailed(**base, **error, **run, raw=raw, isolation=outcome.isolation)
    encoded = _compact(outcome.value)
    value, ref = outcome.value, None
    assert ctx.settings is not None
    if len(encoded) > ctx.settings.inline_result_max_bytes:
        value, ref = None, store.put_blob(encoded, ctx.settings.blob_ttl_s)
    return HandlerSucceeded(
        **base,
        **run,
        value=value,
        value_ref=ref,
        value_bytes=len(encoded),
        raw=raw,
        isolation=outcome.isolation,
        seccomp=outcome.seccomp,
    )


@cache
def chainable(own_tool: str) -> dict[str, dict[str, Any]]:
    """The tools a handler of `own_tool` may call: read-only published tools except `own_tool` itself."""
    return {
        name: spec.args.model_json_schema() for name, spec in TOOLS.items() if spec.hints.read_only and name != own_tool
    }


def _call_tool(ctx: JobContext, call: _Call) -> CallTool:
    """Chained calls go through the log like a client's (validation, events, a worker), as the handler's actor."""
    assert ctx.store is not None
    store, deadline = ctx.store, time.monotonic() + LIMITS.wall_seconds

    def call_tool(name: str, args: dict[str, Any]) -> Any:
        left = max(0.1, deadline - time.monotonic())
        event = call_and_wait(
            store,
            TOOLS[name],
            args,
            actor=call.requested.actor,
            timeout_s=left,
            trace_id=call.requested.trace_id,
            causation_id=call.succeeded.id,
        )
        data = event.data
        if isinstance(data, ToolFailed):
            raise JobFailed(data.code, data.message)
        assert isinstance(data, ToolSucceeded)
        return json.loads(store.get_blob(data.output_ref)) if data.output_ref else data.result

    return call_tool


@worker_process_init.connect
def _warm_sandbox(**_: object) -> None:
    """Start this worker process's sandbox server now, so the first handler does not pay ~70 ms for it."""
    try:
        get_sandbox().run("None", None, limits=LIMITS)
    except SandboxUnavailable:
        logger.warning("no sandbox on this worker: Python result handlers will fail here (retryable)")


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _ms_since(ts: datetime) -> float:
    return max(0.0, (datetime.now(UTC) - ts).total_seconds() * 1000)


def _elapsed_ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 3)
