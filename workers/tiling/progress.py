"""The parent's progress counts its tiles: after a tile's outcome lands, its worker reports the parent's count.

Reports only ever raise the count (`lt` on the parent's progress), whichever tile's report lands first.
"""

from geogate.calls import keys
from geogate.calls.projections.tiles import DONE
from geogate.calls.publish import new_event
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from schemas.events import Event, ToolProgress
from schemas.ids import call_aggregate
from schemas.tools.tiling import tile_of
from workers.jobs import Finished, Land, Next


def report_tiles_done(store: EventStore, parent: str, cause: Event) -> None:
    """Append the parent's `tool.progress` for its tiles done so far (nothing once it has a higher one)."""
    key = store.live.call(parent)
    done, total = store.redis.hmget(key, [DONE, "tiles"])
    if done is None or total is None:
        return  # the plan has not landed yet: a later tile reports
    count, tiles = int(done), int(total)
    progress = ToolProgress(call_id=parent, progress=count, total=tiles, message=f"{count}/{tiles} tiles done")
    event = new_event(call_aggregate(parent), progress, actor=cause.actor, trace_id=cause.trace_id)
    store.append(event, keys.tiles_progress_key(parent, count), expect=Expect(key, "progress", "lt", (str(count),)))


def tile_ended(finished: Finished) -> Next | None:
    """After a tile's success lands, report its parent's count of tiles done (a follow-up, `workers.jobs`)."""
    tile, store = tile_of(finished.call.call_id), finished.ctx.store
    if tile is None or store is None or finished.outcome.type != "tool.succeeded":
        return None

    def then(land: Land) -> None:
        if land():
            report_tiles_done(store, tile[0], finished.requested)

    return Next(finished.outcome, [], then)
