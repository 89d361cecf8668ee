"""The tiles of a tiled call: the parent's counts and fan-in run (`…:p:call:<id>`) and each tile's state
(`…:p:tiles:<id>`), folded from the tiles' own `tool.*` events and the parent's `tool.fanned_out` /
`tool.fan_in_started`. The fan-in's enqueue rides on these counts (`geogate.calls.fan_in`)."""

from geogate.calls.keys import ProjectionKeys, fan_in_run
from geogate.calls.projections.registry import expire_finished, projector
from geogate.calls.projections.running import running_value
from geogate.eventlog.append import Op, hset, hset_unless
from schemas.events import (
    Event,
    ToolFailed,
    ToolFanInStarted,
    ToolFannedOut,
    ToolRedispatched,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.tools.tiling import tile_of

TERMINAL = ("succeeded", "failed")
TILE_STATES = ("queued", "running", "redispatched", "done", "failed")
"""What the ops page colours a tile by."""
DONE, FAILED = "tiles_done", "tiles_failed"
"""The parent's counters of tiles that succeeded and that failed."""


def _tile_state(call_id: str, state: str, keys: ProjectionKeys, *, count: str | None = None) -> list[Op]:
    tile = tile_of(call_id)
    if tile is None:
        return []
    parent, index = tile
    ops = [hset(keys.tiles(parent), {str(index): state})]
    return ops + ([Op("HINCRBY", keys.call(parent), (count, 1))] if count else [])


@projector("tool.requested")
def _queued(event: Event, keys: ProjectionKeys) -> list[Op]:
    return _tile_state(event.payload(ToolRequested).call_id, "queued", keys)


@projector("tool.started")
def _running(event: Event, keys: ProjectionKeys) -> list[Op]:
    return _tile_state(event.payload(ToolStarted).call_id, "running", keys)


@projector("tool.redispatched")
def _redispatched(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolRedispatched)
    if data.stage == "fan_in":
        return [hset(keys.call(data.call_id), {"attempt": ""}), Op("HDEL", keys.running(), (fan_in_run(data.call_id),))]
    return _tile_state(data.call_id, "redispatched", keys) if data.stage == "tool" else []


@projector("tool.succeeded")
def _done(event: Event, keys: ProjectionKeys) -> list[Op]:
    call_id = event.payload(ToolSucceeded).call_id
    return _tile_state(call_id, "done", keys, count=DONE) + _parent_ended(event, call_id, keys)


@projector("tool.failed")
def _failed(event: Event, keys: ProjectionKeys) -> list[Op]:
    """A failed tile fails its parent: the parent's cancel flag stops the other tiles at once (they read it at
    their start and at each progress), before the fan-in has even run."""
    call_id = event.payload(ToolFailed).call_id
    tile = tile_of(call_id)
    stop = [hset_unless(keys.call(tile[0]), "status", TERMINAL, {"cancel": "1"})] if tile else []
    return _tile_state(call_id, "failed", keys, count=FAILED) + stop + _parent_ended(event, call_id, keys)


def _parent_ended(event: Event, call_id: str, keys: ProjectionKeys) -> list[Op]:
    """Any call's outcome ends its fan-in run, if it had one, and its tile map expires with it (the call's index
    expires by the call's own projector, on the same event)."""
    if tile_of(call_id) is not None:
        return []
    expiry = expire_finished(event, keys, keys.tiles(call_id), index=False)
    return [Op("HDEL", keys.running(), (fan_in_run(call_id),)), *expiry]


@projector("tool.fanned_out")
def _fanned_out(event: Event, keys: ProjectionKeys) -> list[Op]:
    """The parent gives its worker back: out of the running index, no current attempt, its grid recorded."""
    data = event.payload(ToolFannedOut)
    grid = {"tiles": data.tiles, "tiles_columns": data.columns, "tiles_rows": data.rows, "tiles_folder": data.folder}
    update = {**grid, "stage": "tiles", "attempt": "", "lease": ""}
    return [
        hset_unless(keys.call(data.call_id), "status", TERMINAL, update),
        Op("HDEL", keys.running(), (data.call_id,)),
    ]


@projector("tool.fan_in_started")
def _fan_in_started(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolFanInStarted)
    key = keys.call(data.call_id)
    update = {"stage": "fan_in", "worker": data.worker, "attempt": data.attempt, "lease": data.lease}
    entry = running_value(event, lease=data.lease, worker=data.worker, attempt=data.attempt)
    return [
        hset_unless(key, "status", TERMINAL, update),
        Op("HINCRBY", key, ("fan_in_attempts", 1)),
        hset(keys.running(), {fan_in_run(data.call_id): entry}),
    ]
