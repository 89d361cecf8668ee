"""Fan-in on the log: the append that completes a tiled call's count also enqueues its fan-in, atomically.

Every tile's outcome carries the parent's fan-in push, conditioned on the parent's counts as the tile projection
leaves them in the same script (`Op.when`): it fires on the outcome that brings `tiles_done` to `tiles`, or on the
first failed tile. The parent's `tool.fanned_out` carries it too, for tiles that all ended before the plan did.
Outcomes append once (dedupe keys), so the fan-in is pushed once whatever the redeliveries; no chord, no polling.
These ops are effects of a live append only: a replay rebuilds the counts and pushes nothing.
"""

from dataclasses import replace

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.tiles import DONE, FAILED
from geogate.calls.publish import fan_in_op
from geogate.eventlog.append import Expect, Op
from schemas.events import Event, ToolFailed, ToolFannedOut, ToolSucceeded
from schemas.tools.tiling import tile_of


def fan_in_ops(event: Event, keys: ProjectionKeys) -> list[Op]:
    """The conditional fan-in push that `event` carries, if it is a tile's outcome or a fan-out."""
    if isinstance(event.data, ToolFannedOut):
        parent = event.data.call_id
        return [_when(event, parent, Expect(keys.call(parent), DONE, "same", ("tiles",)))]
    if not isinstance(event.data, ToolSucceeded | ToolFailed):
        return []
    tile = tile_of(event.data.call_id)
    if tile is None:
        return []
    key = keys.call(tile[0])
    if isinstance(event.data, ToolSucceeded):
        return [_when(event, tile[0], Expect(key, DONE, "same", ("tiles",)))]
    return [_when(event, tile[0], Expect(key, FAILED, "in", ("1",)))]


def _when(event: Event, parent: str, condition: Expect) -> Op:
    return replace(fan_in_op(event, parent), when=condition)
