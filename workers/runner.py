"""The one lifecycle of a tool call on a worker: started → job (with progress) → succeeded | failed, idempotently."""

import json
import logging
import time
from datetime import UTC, datetime

from celery.exceptions import SoftTimeLimitExceeded
from pydantic import BaseModel, ValidationError

from eventlog import streams
from eventlog.append import Expect, Readback
from eventlog.projections.calls import TERMINAL
from eventlog.publish import follow
from eventlog.settings import Settings
from eventlog.store import EventStore
from schemas.codec import decode
from schemas.events import Event, EventData, ToolFailed, ToolProgress, ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import new_id
from schemas.tools import SPECS
from schemas.tools.handlers import RUN_RESULT_HANDLER
from workers.context import JobContext
from workers.errors import JobCancelled, JobError, JobFailed
from workers.jobs import JOBS
from workers.sandbox.job import handler_job_op

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.1
"""At most one progress event per this interval (the last one always goes)."""


def run_call(store: EventStore, settings: Settings, worker: str, payload: bytes) -> None:
    """Run one tool call through its lifecycle; safe to call again after a redelivery."""
    requested = decode(payload)
    data = requested.data
    assert isinstance(data, ToolRequested)
    if data.tool == RUN_RESULT_HANDLER.name:
        _run_follow_up(store, settings, worker, requested)
        return
    started = follow(
        requested,
        ToolStarted(call_id=data.call_id, worker=worker, attempt=new_id(), queue_wait_ms=_ms_since(requested.ts)),
    )
    call_key = store.live.call(data.call_id)
    result = store.append(
        started,
        streams.started_key(data.call_id, started.payload(ToolStarted).attempt),
        expect=Expect(call_key, "status", "not_in", TERMINAL),
        readback=Readback(call_key, "cancel"),
    )
    if result.refused:
        return  # acks_late redelivery of a call that already has its outcome
    if result.readback == "1":
        outcome: EventData = _failed(data.call_id, JobCancelled("the call was cancelled before it started"), 0.0)
    else:
        outcome = _execute(data, _context(store, settings, requested, started), store, settings)
    final = follow(requested, outcome)
    # A handler job is enqueued in the same atomic append as the outcome it follows: neither exists without the other.
    effects = [handler_job_op(final)] if data.result_handler and isinstance(outcome, ToolSucceeded) else []
    store.append(final, streams.outcome_key(data.call_id), effects=effects)


def _context(store: EventStore, settings: Settings, requested: Event, started: Event) -> JobContext:
    data, start = requested.data, started.data
    assert isinstance(data, ToolRequested) and isinstance(start, ToolStarted)
    return JobContext(
        call_id=data.call_id,
        roots=settings.workspace_roots(),
        sink=_progress_sink(store, requested, start.attempt),
        worker=start.worker,
        queue=data.queue,
        queue_wait_ms=start.queue_wait_ms,
        actor=requested.actor,
        trace_id=requested.trace_id,
        store=store,
        settings=settings,
    )


def _run_follow_up(store: EventStore, settings: Settings, worker: str, command: Event) -> None:
    """Run a job that follows a finished call and appends its own events on it (`handler.*`), not `tool.*`."""
    data = command.data
    assert isinstance(data, ToolRequested)
    ctx = JobContext(
        call_id=data.call_id,
        roots=settings.workspace_roots(),
        worker=worker,
        queue=data.queue,
        actor=command.actor,
        trace_id=command.trace_id,
        store=store,
        settings=settings,
    )
    try:
        _run_job(data, ctx)
    except JobError:  # no outcome to append on someone else's call: the job appends its own failures
        logger.exception("follow-up job %s could not run (call %s)", data.tool, data.call_id)


def _execute(data: ToolRequested, ctx: JobContext, store: EventStore, settings: Settings) -> EventData:
    began = time.perf_counter()
    try:
        value = _run_job(data, ctx)
    except JobError as exc:
        return _failed(data.call_id, exc, _elapsed_ms(began), ctx.worker)
    except SoftTimeLimitExceeded:
        timeout = JobFailed("job.timeout", f"the job ran longer than {settings.job_time_limit_s} s", retryable=True)
        return _failed(data.call_id, timeout, _elapsed_ms(began), ctx.worker)
    except Exception:  # top of the task: any crash becomes tool.failed, the trace stays in the worker log
        logger.exception("job %s crashed (call %s)", data.tool, data.call_id)
        crash = JobFailed("job.crashed", f"the {data.tool} job crashed; see the worker log for call {data.call_id}")
        return _failed(data.call_id, crash, _elapsed_ms(began), ctx.worker)
    keep_raw = data.result_handler is not None  # the handler's input stays readable as calls://<id>/raw
    return _succeeded(data.call_id, value, store, settings, _elapsed_ms(began), ctx.worker, keep_raw)


def _run_job(data: ToolRequested, ctx: JobContext) -> BaseModel:
    spec, job = SPECS.get(data.tool), JOBS.get(data.tool)
    if spec is None or job is None:
        raise JobFailed("tool.unknown", f"this worker has no job for tool {data.tool!r}")
    try:
        args = spec.args.model_validate(data.args)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise JobFailed("args.invalid", f"{field}: {first['msg']}", field=field) from exc
    return job(args, ctx)


def _succeeded(
    call_id: str, value: BaseModel, store: EventStore, settings: Settings, ms: float, worker: str, keep_raw: bool
) -> ToolSucceeded:
    result = value.model_dump(mode="json")
    text = value.summary() if hasattr(value, "summary") else ""
    encoded = json.dumps(result, separators=(",", ":")).encode()
    if len(encoded) <= settings.inline_result_max_bytes and not keep_raw:
        return ToolSucceeded(call_id=call_id, result=result, text=text, duration_ms=ms, worker=worker)
    ref = store.put_blob(encoded, settings.blob_ttl_s)
    return ToolSucceeded(call_id=call_id, result=None, text=text, output_ref=ref, duration_ms=ms, worker=worker)


def _failed(call_id: str, exc: JobError, ms: float, worker: str = "") -> ToolFailed:
    return ToolFailed(
        call_id=call_id,
        code=exc.code,
        message=exc.message,
        retryable=exc.retryable,
        field=exc.field,
        duration_ms=ms,
        worker=worker,
    )


def _progress_sink(store: EventStore, requested: Event, attempt: str):
    data = requested.data
    assert isinstance(data, ToolRequested)
    call_key = store.live.call(data.call_id)
    state = {"seq": 0, "last": 0.0}

    def sink(progress: float, total: float | None, message: str | None) -> bool:
        now = time.monotonic()
        final = total is not None and progress >= total
        if now - state["last"] < PROGRESS_INTERVAL_S and not final:
            return False
        state["seq"] += 1
        state["last"] = now
        event = follow(requested, ToolProgress(call_id=data.call_id, progress=progress, total=total, message=message))
        key = streams.progress_key(data.call_id, attempt, int(state["seq"]))
        return store.append(event, key, readback=Readback(call_key, "cancel")).readback == "1"

    return sink


def _ms_since(ts: datetime) -> float:
    return max(0.0, (datetime.now(UTC) - ts).total_seconds() * 1000)


def _elapsed_ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 3)
