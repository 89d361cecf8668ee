"""The metrics projection: counters folded from the log (events by type, outcomes, failure codes, run time)."""

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.ops import whole_us
from geogate.calls.projections.registry import projector
from geogate.eventlog.append import Op
from schemas.events import Event, ToolFailed, ToolSucceeded

COUNTED = (
    "tool.requested",
    "tool.started",
    "tool.succeeded",
    "tool.failed",
    "tool.cancel_requested",
    "tool.redispatched",
    "call.rejected",
)


@projector(*COUNTED)
def _count(event: Event, keys: ProjectionKeys) -> list[Op]:
    ops = [Op("HINCRBY", keys.metrics(), (f"events:{event.type}", 1))]
    data = event.data
    if isinstance(data, ToolSucceeded | ToolFailed):
        # integer microseconds: sums are exact whatever order replay applies them in (and bounded)
        ops.append(Op("HINCRBY", keys.metrics(), (f"duration_us_sum:{event.type}", whole_us(data.duration_ms))))
    if isinstance(data, ToolFailed):
        ops.append(Op("HINCRBY", keys.metrics(), (f"failed:{data.code}", 1)))
    return ops
