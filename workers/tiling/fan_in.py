"""The fan-in of a tiled call (`tiles.fan_in`): assemble the output from its tiles, or fail the call naming the
failed tile, then remove the parts. It runs once per push (`geogate.calls.fan_in`), as its own fenced run of the
parent: `tool.fan_in_started` makes it the parent's current attempt, so a re-dispatch supersedes a lost one and its
outcome lands through the same fence as any call's."""

import json
import logging
import time
from typing import Any

from pydantic import BaseModel

from geogate.calls import keys
from geogate.calls.held import restored
from geogate.calls.projections.call_state import TERMINAL
from geogate.calls.publish import follow
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect, Readback
from schemas.events import Event, EventData, ToolFanInStarted, ToolFannedOut, ToolRequested
from schemas.ids import call_aggregate, new_id
from schemas.tools import SPECS
from schemas.tools.tiling import FanInArgs, FanInResult, TileArgs, TileResult, tile_call_id
from workers.jobkit.confine import confinement
from workers.jobkit.context import Fence, JobContext
from workers.jobkit.errors import JobCancelled, JobError, JobFailed
from workers.jobs import object_roots
from workers.run.lifecycle import Run, begin, elapsed_ms
from workers.run.memory import out_of_memory, ran_out_of_memory
from workers.run.reaper import fan_in_attempts_exhausted
from workers.run.runner import failed_outcome, finish, succeeded_outcome
from workers.tiling.declare import JOINS, TILERS
from workers.tiling.grid import remove_named_parts

logger = logging.getLogger(__name__)


def fan_in(args: FanInArgs, ctx: JobContext) -> FanInResult:
    """End tiled call `args.call_id` from its tiles; a duplicate push after the outcome does nothing."""
    store = ctx.store
    assert store is not None and ctx.settings is not None, "the runner passes the store and settings"
    events = store.read_aggregate(call_aggregate(args.call_id))
    requested = _first(events, ToolRequested)
    if requested is None:
        logger.warning("fan-in of unknown call %s: nothing to do", args.call_id)
        return FanInResult(call_id=args.call_id, status="skipped")
    run = _run(store, ctx, requested)
    begun = begin(store, run)
    if begun is None:
        return FanInResult(call_id=args.call_id, status="duplicate")
    fanned = _first(events, ToolFannedOut)
    folder = fanned.payload(ToolFannedOut).folder if fanned is not None else ""
    parts = folder or None  # a plan's steps leave no parts
    fenced = _fenced(store, ctx, args.call_id, run.attempt)
    outcome, output = _outcome(store, fenced, requested, cancelled=begun.readback == "1", parts=parts)
    finish(store, ctx.settings, requested, run, outcome, output, fenced)  # a result handler follows as for any call
    if parts is not None and store.call_state(args.call_id).terminal:  # type: ignore[union-attr]
        remove_named_parts(parts)  # an assembled call's: a fan-in that superseded this one needs them until its outcome
    return FanInResult(call_id=args.call_id, status=outcome.type.split(".")[1])


def _outcome(
    store: EventStore, ctx: JobContext, requested: Event, *, cancelled: bool, parts: str | None
) -> tuple[EventData, Any]:
    """The parent's outcome, and its output as JSON (None when it failed).

    A failed tile or a cancel (at the fan-in's start, or during the assembly) ends the call the same whichever
    fan-in lands the outcome, and neither end reads the parts again: they are removed first, so that a client never
    finds them in its workspace once the call has ended.
    """
    data, began, failed = requested.payload(ToolRequested), time.perf_counter(), None
    try:
        failed = _failed_tile(store, data.call_id)
        if failed is not None:
            raise failed  # its projection has already stopped the other tiles (the parent's cancel flag)
        if cancelled:
            raise JobCancelled()
        value = _assemble(store, ctx, data)
    except JobError as exc:
        if parts is not None and (exc is failed or isinstance(exc, JobCancelled)):
            remove_named_parts(parts)
        error = out_of_memory(ctx.settings, data.tool) if ctx.settings and ran_out_of_memory(exc) else exc
        return failed_outcome(data.call_id, error, elapsed_ms(began), ctx.worker), None
    except Exception as exc:  # top of the job: a crash in assembly fails the call, the trace stays in the worker log
        if ctx.settings and ran_out_of_memory(exc):  # GEOGATE_JOB_MEMORY_MB: a clear error, not a crash
            logger.warning("assembly of tiled call %s ran out of memory", data.call_id)
            oom = out_of_memory(ctx.settings, data.tool)
            return failed_outcome(data.call_id, oom, elapsed_ms(began), ctx.worker), None
        logger.exception("assembly of tiled call %s crashed", data.call_id)
        crash = JobFailed("job.crashed", f"assembling the tiles of call {data.call_id} crashed; see the worker log")
        return failed_outcome(data.call_id, crash, elapsed_ms(began), ctx.worker), None
    assert ctx.settings is not None
    output, keep_raw = value.model_dump(mode="json"), data.result_handler is not None
    ms = elapsed_ms(began)
    return succeeded_outcome(data.call_id, value, output, store, ctx.settings, ms, ctx.worker, keep_raw), output


def _assemble(store: EventStore, ctx: JobContext, data: ToolRequested) -> BaseModel:
    if data.tool in JOINS:
        return JOINS[data.tool].result(store, data)
    tiles = int(store.redis.hget(store.live.call(data.call_id), "tiles") or 0)
    states = [store.call_state(tile_call_id(data.call_id, i)) for i in range(tiles)]
    results = [TileResult.model_validate(store.value_of(s.result, s.output_ref)) for s in states if s is not None]
    if tiles == 0 or len(results) != tiles:
        raise JobFailed(
            "tiles.missing", f"call {data.call_id}: {tiles - len(results)} of its {tiles} tiles have no result"
        )
    first = TileArgs.model_validate(_tile_args(store, data.call_id, 0))
    args = SPECS[data.tool].args.model_validate(restored(store.redis, store.keys, data).args)
    with object_roots(ctx), confinement(ctx.roots):
        return TILERS[data.tool].assemble(args, first, results, ctx)


def _failed_tile(store: EventStore, call_id: str) -> JobFailed | None:
    """The error of the call's first failed tile (not one stopped by a cancel), naming the tile, its window and the
    cause; None if none failed."""
    states = store.hash_strings(store.live.tiles(call_id))
    failed = sorted(int(index) for index, state in states.items() if state == "failed")
    tiles = {index: store.call_state(tile_call_id(call_id, index)) for index in failed}
    causes = [i for i in failed if (t := tiles[i]) is None or t.error_code != "cancelled"]
    if not causes:
        return None
    index = causes[0]
    if (join := JOINS.get(_tool(store, call_id))) is not None:
        return join.failed(store, call_id, index)
    tile = tiles[index]
    window = TileArgs.model_validate(_tile_args(store, call_id, index)).window
    code, cause = (tile.error_code, tile.error_message) if tile else ("tile.failed", "unknown")
    message = f"tile {index} ({window.describe()}) failed: {cause}"
    details = {"tile": index, "window": window.model_dump(), "code": code}
    return JobFailed(code, message, retryable=False, details=details)


def _tool(store: EventStore, call_id: str) -> str:
    return (store.redis.hget(store.live.call(call_id), "tool") or b"").decode()


def _tile_args(store: EventStore, call_id: str, index: int) -> dict:
    raw = store.redis.hget(store.live.call(tile_call_id(call_id, index)), "args")
    return json.loads(raw) if raw else {}


def _run(store: EventStore, ctx: JobContext, requested: Event) -> Run:
    data = requested.payload(ToolRequested)
    started = follow(
        requested, ToolFanInStarted(call_id=data.call_id, worker=ctx.worker, attempt=new_id(), lease=ctx.lease)
    )
    attempt, key = started.payload(ToolFanInStarted).attempt, store.live.call(data.call_id)
    max_attempts = ctx.settings.max_attempts if ctx.settings else 3

    def exhausted() -> Event:
        attempts = int(store.redis.hget(key, "fan_in_attempts") or 0)
        return follow(requested, fan_in_attempts_exhausted(data.call_id, attempts, max_attempts))

    return Run(
        state=key,
        started=started,
        started_key=keys.fan_in_started_key(data.call_id, attempt),
        outcome_key=keys.outcome_key(data.call_id),
        attempt=attempt,
        may_start=[
            Expect(key, "status", "not_in", TERMINAL),
            Expect(key, "fan_in_attempts", "lt", (str(max_attempts),)),
        ],
        exhausted=exhausted,
        readback=Readback(key, "cancel"),
    )


def _fenced(store: EventStore, ctx: JobContext, call_id: str, attempt: str) -> JobContext:
    key, mine = store.live.call(call_id), attempt.encode()
    ctx.fence = Fence(call_id, attempt, lambda: store.redis.hget(key, "attempt") == mine)
    ctx.call_id = call_id
    # The parent's progress counts its tiles, so the assembly reports none; but its `ctx.progress` still stops at a
    # cancel of the parent, which then wins until the output is published.
    ctx.sink = lambda progress, total, message: store.redis.hget(key, "cancel") == b"1"
    return ctx


def _first(events: list[Event], kind: type) -> Event | None:
    return next((e for e in events if isinstance(e.data, kind)), None)
