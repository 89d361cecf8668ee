"""A tool call on a worker: its run (`workers.run.lifecycle`) started → job (with progress) → succeeded | failed."""

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from pydantic import BaseModel, ValidationError

from geogate.calls import keys
from geogate.calls.held import release_ops, restored
from geogate.calls.projections.call_state import TERMINAL
from geogate.calls.publish import follow
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect, Op, Readback
from geogate.settings import Settings
from schemas.codec import decode
from schemas.events import (
    Event,
    EventData,
    FileDigest,
    ToolFailed,
    ToolProgress,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.ids import new_id
from schemas.tools import SPECS
from schemas.tools.tiling import tile_of
from workers.jobkit.context import Fence, JobContext, ProgressSink
from workers.jobkit.digests import outputs_of, versions
from workers.jobkit.errors import JobCancelled, JobError, JobFailed, JobSuperseded
from workers.jobkit.limits import check_result
from workers.jobs import FOLLOW_UPS, HAND_OFFS, JOBS, OWN_LIFECYCLE, Finished, Land, Next, Started
from workers.run.faults import job_point, pause_point
from workers.run.lifecycle import Run, begin, compact, elapsed_ms, end, ms_since, store_result
from workers.run.memory import out_of_memory, ran_out_of_memory
from workers.run.reaper import attempts_exhausted

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.1
"""At most one progress event per this interval (the last one always goes)."""


def run_call(
    store: EventStore, settings: Settings, worker: str, payload: bytes, *, dispatch: int = 1, lease: str = ""
) -> None:
    """Run one tool call through its lifecycle; safe to call again after a redelivery or a re-dispatch.

    The start is refused when the call has ended, when this message is not the call's current dispatch (a dead
    worker's message that the broker gave back after a re-dispatch), or when the call was started
    `max_attempts` times already (then the call fails with `call.attempts_exhausted`). Progress and the outcome
    are accepted only while this attempt is the current one.
    """
    requested = decode(payload)
    data = restored(store.redis, store.keys, requested.payload(ToolRequested))
    if data.tool in OWN_LIFECYCLE:
        _run_own(store, settings, worker, requested, lease)
        return
    run = _call_run(store, settings, requested, worker, dispatch, lease)
    begun = begin(store, run)
    if begun is None:
        return  # the call ended, this message is stale, or its attempts are used up (and the call failed)
    ctx = _context(store, settings, requested, run.started)
    if begun.readback != "1" and any(taken(Started(requested, run.started, ctx)) for taken in HAND_OFFS):
        return  # a family took the call (a tiled call's tiles run as calls of their own; its fan-in ends it)
    output: Any = None
    if begun.readback == "1":
        outcome: EventData = failed_outcome(data.call_id, JobCancelled("the call was cancelled before it started"), 0.0)
    else:
        outcome, output = _execute(data, ctx, store, settings)
    finish(store, settings, requested, run, outcome, output, ctx)


def finish(
    store: EventStore, settings: Settings, requested: Event, run: Run, outcome: EventData, output: Any, ctx: JobContext
) -> None:
    """Append a run's outcome with what the families declare to follow it (a result handler's job or its run in
    place): the end of a call's job, or of a tiled call's fan-in. Dropped when the run was superseded."""
    data = requested.payload(ToolRequested)
    after = _next(Finished(requested, follow(requested, outcome), output, ctx))
    after = replace(after, effects=[*after.effects, *release_ops(store.keys, data)])  # the held arguments go with it
    landed: list[bool] = []

    def land() -> bool:
        if not landed:
            landed.append(
                end(store, run, after.outcome, after.effects) or _restart_lost(store, settings, requested, run, after)
            )
            if not landed[0]:
                logger.warning(
                    "attempt %s of call %s was superseded by a re-dispatch; its outcome is dropped",
                    run.attempt,
                    data.call_id,
                )
        return landed[0]

    try:
        if after.then is not None:
            after.then(land)
    finally:
        land()  # `then` may have failed before it landed the outcome


def _restart_lost(store: EventStore, settings: Settings, requested: Event, run: Run, after: Next) -> bool:
    """The outcome was refused because Redis lost this attempt's start (a restart with `appendfsync everysec` drops
    the last second of writes): the call is back to `requested`. Start it again, fenced as any start (a re-dispatch
    in between refuses it), and end it with the outcome in hand; True when that landed."""
    data, started = requested.payload(ToolRequested), run.started.payload(ToolStarted)
    state = store.call_state(data.call_id)
    if state is None or state.status != "requested":
        return False
    again = _call_run(store, settings, requested, started.worker, started.dispatch, started.lease)
    if begin(store, again) is None or not end(store, again, after.outcome, after.effects):
        return False
    logger.warning("the start of call %s was lost by Redis; started again and ended with its outcome", data.call_id)
    return True


def _next(finished: Finished) -> Next:
    """What the families declare to follow the outcome (`@follow_up`): one outcome, all their effects, their work."""
    final, effects, work = finished.outcome, [], []
    for follow_up in FOLLOW_UPS:
        planned = follow_up(replace(finished, outcome=final))
        if planned is not None:
            final = planned.outcome
            effects += planned.effects
            work += [planned.then] if planned.then else []

    def then(land: Land) -> None:
        for step in work:
            step(land)

    return Next(final, effects, then if work else None)


def _call_run(store: EventStore, settings: Settings, requested: Event, worker: str, dispatch: int, lease: str) -> Run:
    data = requested.payload(ToolRequested)
    started = follow(
        requested,
        ToolStarted(
            call_id=data.call_id,
            worker=worker,
            attempt=new_id(),
            queue_wait_ms=ms_since(requested.ts),
            lease=lease,
            dispatch=dispatch,
        ),
    )
    attempt, call_key = started.payload(ToolStarted).attempt, store.live.call(data.call_id)

    def exhausted() -> Event:
        failed = attempts_exhausted(data.call_id, store.read_aggregate(requested.aggregate), settings.max_attempts)
        return follow(requested, failed)

    return Run(
        state=call_key,
        started=started,
        started_key=keys.started_key(data.call_id, attempt),
        outcome_key=keys.outcome_key(data.call_id),
        attempt=attempt,
        may_start=_may_start(call_key, dispatch, settings.max_attempts),
        exhausted=exhausted,
        exhausted_expect=[Expect(call_key, "dispatch", "in", (str(dispatch), ""))],
        readback=_cancel_flag(store, data.call_id),
    )


def _cancel_flag(store: EventStore, call_id: str) -> Readback:
    """Where a run reads whether it was cancelled: its call's flag, or for a tile its parent's (a cancel of the
    parent, or the fan-in failing it, stops every tile)."""
    tile = tile_of(call_id)
    return Readback(store.live.call(tile[0] if tile else call_id), "cancel")


def _may_start(call_key: str, dispatch: int, max_attempts: int) -> list[Expect]:
    """Not ended; this message is the current dispatch (a call from before dispatch numbers has none); attempts left."""
    dispatches = (str(dispatch), "") if dispatch == 1 else (str(dispatch),)
    return [
        Expect(call_key, "status", "not_in", TERMINAL),
        Expect(call_key, "dispatch", "in", dispatches),
        Expect(call_key, "attempts", "lt", (str(max_attempts),)),
    ]


def _context(store: EventStore, settings: Settings, requested: Event, started: Event) -> JobContext:
    data, start = requested.payload(ToolRequested), started.payload(ToolStarted)
    call_key, fenced = store.live.call(data.call_id), start.attempt.encode()
    return JobContext(
        call_id=data.call_id,
        roots=settings.workspace_roots(),
        sink=_progress_sink(store, settings, requested, start),
        worker=start.worker,
        queue=data.queue,
        queue_wait_ms=start.queue_wait_ms,
        actor=requested.actor,
        trace_id=requested.trace_id,
        store=store,
        settings=settings,
        fence=Fence(data.call_id, start.attempt, lambda: store.redis.hget(call_key, "attempt") == fenced),
        lease=start.lease,
        client_capabilities=frozenset(data.client_capabilities),
    )


def _run_own(store: EventStore, settings: Settings, worker: str, command: Event, lease: str) -> None:
    """Run a job that manages its own lifecycle on a finished call (`handler.*`), not `tool.*`."""
    data = command.payload(ToolRequested)
    ctx = JobContext(
        call_id=data.call_id,
        roots=settings.workspace_roots(),
        worker=worker,
        queue=data.queue,
        actor=command.actor,
        trace_id=command.trace_id,
        store=store,
        settings=settings,
        lease=lease,
    )
    try:
        _run_job(data, ctx)
    except JobError:  # no outcome to append on someone else's call: the job appends its own failures
        logger.exception("job %s could not run (call %s)", data.tool, data.call_id)


def _execute(data: ToolRequested, ctx: JobContext, store: EventStore, settings: Settings) -> tuple[EventData, Any]:
    """The outcome of the job, and its output as JSON (None when it failed)."""
    began = time.perf_counter()
    try:
        value = _run_job(data, ctx)
        output = value.model_dump(mode="json")
        check_result(settings, len(compact(output)))  # `GEOGATE_LIMIT_RESULT_BYTES`
    except JobError as exc:
        error = out_of_memory(settings, data.tool) if ran_out_of_memory(exc) else exc
        return failed_outcome(data.call_id, error, elapsed_ms(began), ctx.worker), None
    except SoftTimeLimitExceeded:
        timeout = JobFailed("job.timeout", f"the job ran longer than {settings.job_time_limit_s} s", retryable=True)
        return failed_outcome(data.call_id, timeout, elapsed_ms(began), ctx.worker), None
    except Exception as exc:  # top of the task: any crash becomes tool.failed, the trace stays in the worker log
        if ran_out_of_memory(exc):  # GEOGATE_JOB_MEMORY_MB: a clear error, not a crash
            logger.warning("job %s ran out of memory (call %s)", data.tool, data.call_id)
            return failed_outcome(data.call_id, out_of_memory(settings, data.tool), elapsed_ms(began), ctx.worker), None
        logger.exception("job %s crashed (call %s)", data.tool, data.call_id)
        crash = JobFailed("job.crashed", f"the {data.tool} job crashed; see the worker log for call {data.call_id}")
        return failed_outcome(data.call_id, crash, elapsed_ms(began), ctx.worker), None
    keep_raw = data.result_handler is not None  # the handler's input stays readable as calls://<id>/raw
    return succeeded_outcome(
        data.call_id, value, output, store, settings, elapsed_ms(began), ctx.worker, keep_raw, ctx.inputs
    ), output


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
    pause_point(ctx, job_point(data.tool))
    return job(args, ctx)


def succeeded_outcome(
    call_id: str,
    value: BaseModel,
    output: Any,
    store: EventStore,
    settings: Settings,
    ms: float,
    worker: str,
    keep_raw: bool,
    inputs: Sequence[FileDigest] = (),
) -> ToolSucceeded:
    """The success event of a job: its result (inline or as a blob), and for provenance the files it read and
    wrote (a tile's parts aside: its parent's outcome names the output) with this worker's software versions."""
    text = value.summary() if hasattr(value, "summary") else ""
    content = value.blocks() if hasattr(value, "blocks") else []
    kept = store_result(store, settings, output, keep=keep_raw)
    outputs = outputs_of(output) if getattr(value, "wrote", True) else []
    return ToolSucceeded(
        call_id=call_id,
        result=kept.value,
        text=text,
        content=content,
        output_ref=kept.ref,
        duration_ms=ms,
        worker=worker,
        inputs=list(inputs),
        outputs=outputs,
        versions=versions() if inputs or outputs else {},
    )


def failed_outcome(call_id: str, exc: JobError, ms: float, worker: str = "") -> ToolFailed:
    return ToolFailed(
        call_id=call_id,
        code=exc.code,
        message=exc.message,
        retryable=exc.retryable,
        field=exc.field,
        details=exc.details,  # type: ignore[arg-type]
        duration_ms=ms,
        worker=worker,
    )


def _progress_sink(store: EventStore, settings: Settings, requested: Event, started: ToolStarted) -> ProgressSink:
    """Appends throttled `tool.progress`, renewing the worker's lease; True when cancelled.

    Raises:
        JobSuperseded: the call was re-dispatched; this attempt's progress no longer counts.
    """
    data, attempt = requested.payload(ToolRequested), started.attempt
    call_key = store.live.call(data.call_id)
    current = Expect(call_key, "attempt", "in", (attempt,))
    renew = (
        [Op("PEXPIRE", store.keys.lease(started.lease), (int(settings.lease_ttl_s * 1000),))] if started.lease else []
    )
    state = {"seq": 0, "last": 0.0}

    def sink(progress: float, total: float | None, message: str | None) -> bool:
        now = time.monotonic()
        final = total is not None and progress >= total
        if now - state["last"] < PROGRESS_INTERVAL_S and not final:
            return False
        state["seq"] += 1
        state["last"] = now
        event = follow(requested, ToolProgress(call_id=data.call_id, progress=progress, total=total, message=message))
        key = keys.progress_key(data.call_id, attempt, int(state["seq"]))
        appended = store.append(event, key, expect=current, effects=renew, readback=_cancel_flag(store, data.call_id))
        if appended.refused:
            raise JobSuperseded(data.call_id, attempt)
        return appended.readback == "1"

    return sink
