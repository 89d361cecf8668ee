"""A call's result handler: run over its raw output, appending `handler.started` → `handler.succeeded|failed`.

Where it runs (`_handler_next`, a follow-up of the tool's job):
- **in place**, by default: on the worker that ran the tool, right after `tool.succeeded`, over the output still in
  memory, in that worker's warm sandbox. No second queue hop, no read back of the raw output. `tool.succeeded`
  names the worker's lease, so the run is held by it from then on and the reaper recovers it if the node dies;
- **on the `sandbox` queue**, as the `run_result_handler` job, for Python handlers that call tools: they wait on
  other calls, and in place they could hold every process of the pool those calls need. The job is enqueued in
  the same atomic append as `tool.succeeded`; it reads the call back from the log.

Either way the appends are keyed and fenced on the run's attempt, so a run is never ended twice.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from celery.signals import worker_process_init

from geogate.calls import keys
from geogate.calls.projections.handlers import TERMINAL
from geogate.calls.publish import follow, handler_job_op
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from geogate.eventlog.errors import BlobMissing
from geogate.settings import process_settings
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
from schemas.ids import call_aggregate, new_id
from schemas.result_handlers import HandlerLimits, HandlerOutcome, ResultHandler
from schemas.tools import TOOLS
from schemas.tools.handlers import RunResultHandlerArgs, RunResultHandlerResult
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import Finished, Land, Next, follow_up
from workers.run import calling
from workers.run.lifecycle import Run, begin, compact, elapsed_ms, end, ms_since, store_result
from workers.run.reaper import handler_attempts_exhausted
from workers.sandbox.bridge import CallTool
from workers.sandbox.errors import SandboxUnavailable
from workers.sandbox.isolation import SandboxConfig, config_for
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


@follow_up
def _handler_next(finished: Finished) -> Next | None:
    """A call with a result handler: run it here, where the raw output is, right after `tool.succeeded`; or, for
    a handler that calls tools (it waits on other calls, which must not queue behind it), enqueue this job on
    the `sandbox` queue in the same append as `tool.succeeded`.

    In place, the outcome names this worker's lease (`handler_lease`): from then on the handler run is held by
    it, so a node that dies before or while running it leaves the run to the reaper, as a queued one would.
    """
    if finished.call.result_handler is None or not isinstance(finished.outcome.data, ToolSucceeded):
        return None
    handler = ResultHandler.model_validate(finished.call.result_handler)
    lease = finished.ctx.lease
    if calls_tools(handler) or not lease or (handler.language == "python" and not _sandbox_here(finished.ctx)):
        return Next(finished.outcome, [handler_job_op(finished.outcome)])
    data = finished.outcome.payload(ToolSucceeded).model_copy(update={"handler_lease": lease})
    outcome = finished.outcome.model_copy(update={"data": data})
    call = _Call(finished.requested, outcome)
    return Next(outcome, then=lambda land: _run_in_place(call, finished.output, finished.ctx, land))


def calls_tools(handler: ResultHandler) -> bool:
    """Whether a handler may call tools (`tools.<name>(…)`): such a handler waits on other calls.

    A Python handler names `tools` to call one; a script that merely mentions the word takes the safe path."""
    return handler.language == "python" and "tools" in handler.source


def _run_in_place(call: _Call, output: Any, ctx: JobContext, land: Land) -> None:
    """The handler's lifecycle on the tool's worker, over the output still in memory (no read back).

    The tool's outcome (`land`) and then the handler's start are appended while the sandbox runs the handler (a
    run is pure: it reads its input and returns a value), so their round trips are off the handler's path. An
    outcome that did not land (a re-dispatch superseded this attempt) or a start refused (the reaper re-dispatched
    the handler run while this worker was paused, or it already ended) discards the value and appends nothing more.
    """
    store, settings = ctx.store, ctx.settings
    assert store is not None and settings is not None, "the runner passes the store and settings"
    run = _handler_run(store, settings.max_attempts, call, ctx)
    begun: list[bool] = []
    failed: list[Exception] = []

    def start() -> None:
        try:
            begun.append(land() and begin(store, run) is not None)
        except Exception as exc:  # raised below, after the sandbox's reply is read
            failed.append(exc)

    outcome = _run(call, ctx, store, output, meanwhile=start)  # every way out of `_run` has called `start`
    if failed:
        raise failed[0]
    if begun[0]:
        end(store, run, follow(call.succeeded, outcome))


def run_result_handler(args: RunResultHandlerArgs, ctx: JobContext) -> RunResultHandlerResult:
    """Run the handler of call `args.call_id` and append its events; a redelivery after the outcome does nothing."""
    store, settings = ctx.store, ctx.settings
    assert store is not None and settings is not None, "the runner passes the store and settings"
    call = _read_call(store, args.call_id)
    if call is None:
        logger.warning("call %s has no successful tool run with a handler; nothing to do", args.call_id)
        return RunResultHandlerResult(call_id=args.call_id, status="skipped")
    run = _handler_run(store, settings.max_attempts, call, ctx)
    if begin(store, run) is None:  # redelivered after the outcome, or its workers kept dying
        return RunResultHandlerResult(call_id=args.call_id, status="duplicate")
    outcome = _run(call, ctx, store, _ABSENT)
    end(store, run, follow(call.succeeded, outcome))
    return RunResultHandlerResult(call_id=args.call_id, status=outcome.type.split(".")[1])


def _handler_run(store: EventStore, max_attempts: int, call: _Call, ctx: JobContext) -> Run:
    call_id = call.requested.payload(ToolRequested).call_id
    data = HandlerStarted(
        call_id=call_id,
        language=call.handler.language,
        worker=ctx.worker,
        attempt=new_id(),
        queue_wait_ms=ms_since(call.succeeded.ts),
        lease=ctx.lease,
    )
    state = store.live.handler(call_id)

    def exhausted() -> Event:
        return follow(call.succeeded, handler_attempts_exhausted(call_id, store.hash_strings(state), max_attempts))

    return Run(
        state=state,
        started=follow(call.succeeded, data),
        started_key=keys.handler_started_key(call_id, data.attempt),
        outcome_key=keys.handler_outcome_key(call_id),
        attempt=data.attempt,
        may_start=[
            Expect(state, "status", "not_in", TERMINAL),
            Expect(state, "attempts", "lt", (str(max_attempts),)),
        ],
        exhausted=exhausted,
    )


def _read_call(store: EventStore, call_id: str) -> _Call | None:
    events = store.read_aggregate(call_aggregate(call_id))
    requested = next((e for e in events if isinstance(e.data, ToolRequested)), None)
    succeeded = next((e for e in events if isinstance(e.data, ToolSucceeded)), None)
    if requested is None or succeeded is None or requested.payload(ToolRequested).result_handler is None:
        return None
    return _Call(requested, succeeded)


_ABSENT = object()
"""The raw output is not in this process: read it from the log (inline) or its blob."""


def _run(
    call: _Call, ctx: JobContext, store: EventStore, output: Any, meanwhile: Callable[[], None] = lambda: None
) -> HandlerSucceeded | HandlerFailed:
    """Run the handler; the host's own round trips (keeping the raw output for the outcome's link, `meanwhile`)
    are done while the sandbox runs it."""
    handler, began = call.handler, time.perf_counter()
    succeeded = call.succeeded.payload(ToolSucceeded)
    settings = ctx.settings
    assert settings is not None
    kept: list[OutputRef | Exception] = []

    def host_work() -> None:
        if kept:
            return
        meanwhile()  # first: the appends that the handler's outcome must follow
        try:
            kept.append(succeeded.output_ref or store.put_blob(compact(succeeded.result), settings.blob_ttl_s))
        except Exception as exc:  # raised by `raw()`, outside the sandbox's exchange
            kept.append(exc)

    def raw() -> OutputRef:
        host_work()
        if isinstance(kept[0], Exception):
            raise kept[0]
        return kept[0]

    base = {"call_id": succeeded.call_id, "language": handler.language, "worker": ctx.worker}
    try:
        if output is _ABSENT:
            output = store.value_of(succeeded.result, succeeded.output_ref)
        outcome = _execute(handler, output, call, ctx, host_work)
    except BlobMissing:
        return HandlerFailed(**base, code="handler.raw_missing", message="the raw output has expired", raw=raw())
    except SandboxUnavailable as exc:
        ms = elapsed_ms(began)
        return HandlerFailed(**base, code=exc.code, message=exc.message, retryable=True, raw=raw(), duration_ms=ms)
    except Exception:  # top of the job: any crash becomes handler.failed, the trace stays in the worker log
        logger.exception("handler of call %s crashed on the host", base["call_id"])
        message = "the handler run crashed on the worker; see its log"
        ms = elapsed_ms(began)
        return HandlerFailed(**base, code="handler.crashed", message=message, raw=raw(), duration_ms=ms)
    return _outcome_event(outcome, raw(), store, ctx, base)


def _execute(
    handler: ResultHandler, output: Any, call: _Call, ctx: JobContext, meanwhile: Callable[[], None]
) -> HandlerOutcome:
    if handler.language == "jmespath":
        return run_handler(handler, output, limits=LIMITS, meanwhile=meanwhile)
    # Building the chaining bridge compiles every allowed tool's schema (~7 ms): only for scripts that name `tools`.
    chained = calls_tools(handler)
    return run_handler(
        handler,
        output,
        limits=LIMITS,
        call_tool=_call_tool(ctx, call) if chained else None,
        tool_schemas=chainable(call.tool) if chained else None,
        sandbox=get_sandbox(config_for(ctx.settings.security)),
        meanwhile=meanwhile,
    )


def _outcome_event(
    outcome: HandlerOutcome, raw: OutputRef, store: EventStore, ctx: JobContext, base: dict[str, Any]
) -> HandlerSucceeded | HandlerFailed:
    run = {"duration_ms": round(outcome.duration_ms, 3), "tool_calls": outcome.tool_calls, "stdout": outcome.stdout}
    if outcome.error is not None:
        error = outcome.error.model_dump(include={"code", "message", "line", "column", "exc_type"})
        return HandlerFailed(**base, **error, **run, raw=raw, isolation=outcome.isolation)
    assert ctx.settings is not None
    kept = store_result(store, ctx.settings, outcome.value)
    return HandlerSucceeded(
        **base,
        **run,
        value=kept.value,
        value_ref=kept.ref,
        value_bytes=kept.size,
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
        event = calling.call_tool(
            store,
            TOOLS[name],
            args,
            actor=call.requested.actor,
            timeout_s=left,
            ttl_for=ctx.ttl_for,
            trace_id=call.requested.trace_id,
            causation_id=call.succeeded.id,
        )
        data = event.data
        if isinstance(data, ToolFailed):
            raise JobFailed(data.code, data.message)
        data = event.payload(ToolSucceeded)
        return store.value_of(data.result, data.output_ref)

    return call_tool


_SANDBOX_HERE: bool | None = None
"""Whether this process can contain a Python handler (None: not tried yet)."""


def _sandbox_here(ctx: JobContext | None = None) -> bool:
    """Start this process's sandbox server once; without one, Python handlers go to the `sandbox` queue."""
    global _SANDBOX_HERE
    if _SANDBOX_HERE is None:
        config = config_for(ctx.settings.security) if ctx is not None and ctx.settings is not None else SandboxConfig()
        try:
            get_sandbox(config).run("None", None, limits=LIMITS)
            _SANDBOX_HERE = True
        except SandboxUnavailable as exc:
            logger.warning("no sandbox on this worker, its calls' handlers go to the sandbox queue: %s", exc.message)
            _SANDBOX_HERE = False
    return _SANDBOX_HERE


@worker_process_init.connect
def _warm_sandbox(**_: object) -> None:
    """Start this worker process's sandbox server now, so the first handler does not pay ~70 ms for it."""
    global _SANDBOX_HERE
    _SANDBOX_HERE = None  # a forked pool process: the parent's answer was about its own server
    try:
        get_sandbox(config_for(process_settings().security)).run("None", None, limits=LIMITS)
    except SandboxUnavailable as exc:
        logger.warning("no sandbox on this worker, Python result handlers go to the sandbox queue: %s", exc.message)
