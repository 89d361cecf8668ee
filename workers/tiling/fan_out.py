"""Fan-out on the log: a tiled tool's call large enough to plan as tiles is taken off its job (`hand_off`) and
fanned out: its tiles, each a `tool.requested` with its queue message in one append, then the parent's
`tool.fanned_out`; all fenced on the planning attempt and keyed, so planning again appends nothing twice. The
parent's worker is free as soon as this returns (a parent waiting in a slot would starve its pool).
"""

import dataclasses
import logging
from pathlib import Path

from pydantic import JsonValue, ValidationError

from geogate.calls import keys
from geogate.calls.publish import follow, request_effects, request_event
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from schemas.events import Event, ToolFannedOut, ToolRequested, ToolStarted
from schemas.tools import SPECS
from schemas.tools.tiling import TileArgs, tile_call_id, tile_tool
from workers.jobkit.confine import confinement
from workers.jobkit.errors import JobError
from workers.jobs import Started, object_roots
from workers.tiling import part_objects
from workers.tiling.declare import TILERS, Plan

logger = logging.getLogger(__name__)


def fanned_out(started: Started) -> bool:
    """A tiled tool's call large enough to plan as tiles: planned and fanned out (True), or to run whole (False).

    A plan that cannot be made (a missing source, an output in the way) runs whole, where the job says why.
    """
    data, ctx = started.call, started.ctx
    tiling = TILERS.get(data.tool)
    if tiling is None or ctx.store is None:
        return False
    try:
        with object_roots(ctx), confinement(ctx.roots):
            plan = tiling.plan(SPECS[data.tool].args.model_validate(data.args), ctx)
            if plan is not None and isinstance(plan.folder, Path):  # a mirror's folder stands for the call's prefix
                plan = dataclasses.replace(plan, folder=part_objects.folder_uri(plan.folder) or plan.folder)
    except (JobError, ValidationError):
        return False
    if plan is None:
        return False
    if not fan_out(ctx.store, started.requested, started.started, plan):
        logger.warning("the plan of call %s was superseded by a re-dispatch", data.call_id)
    return True


def tile_events(requested: Event, started: Event, plan: Plan) -> list[tuple[Event, dict[str, JsonValue]]]:
    """The `tool.requested` of every tile with its arguments before redaction (`geogate.calls.held`): the
    parent's actor and trace, caused by the parent's start; in row-major
    order, the order of a staging file's bytes, so that its digest follows the rows of tiles as they end
    (`workers.gdal.staging_digest`); the grid's last row, often the shortest, ends the call."""
    data = requested.payload(ToolRequested)
    spec = SPECS[tile_tool(data.tool)]
    events = []
    for index, window in enumerate(plan.windows):
        tile_args = TileArgs(parent=data.call_id, index=index, window=window, plan=plan.shared, tiles=len(plan.windows))
        args = tile_args.model_dump(mode="json")
        tile = request_event(
            spec,
            args,
            call_id=tile_call_id(data.call_id, index),
            actor=requested.actor,
            trace_id=requested.trace_id,
            causation_id=started.id,
        )
        events.append((tile, args))
    return events


def fan_out(store: EventStore, requested: Event, started: Event, plan: Plan) -> bool:
    """Append the tiles and the fan-out while `started` is the parent's current attempt; False when superseded."""
    data = requested.payload(ToolRequested)
    current = Expect(store.live.call(data.call_id), "attempt", "in", (started.payload(ToolStarted).attempt,))
    for tile, args in tile_events(requested, started, plan):
        key = keys.requested_key(tile.payload(ToolRequested).call_id)
        effects = request_effects(tile, args, store.keys, store.dedupe_ttl_s)
        if store.append(tile, key, expect=current, effects=effects).refused:
            return False
    fanned = ToolFannedOut(
        call_id=data.call_id,
        tiles=len(plan.windows),
        columns=plan.columns,
        rows=plan.rows,
        tile_size=plan.tile_size,
        width=plan.width,
        height=plan.height,
        folder=str(plan.folder),
    )
    return not store.append(follow(started, fanned), keys.fanned_out_key(data.call_id), expect=current).refused
