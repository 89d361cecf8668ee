"""Which projectors exist: `projector` registers a fold for event types; `expire_finished` is the expiry they share.

Its own module so that the projector families import it and not their package (`geogate.calls.projections`
imports the families to register them): no import circle (tests/unit/test_boundaries.py).
"""

from collections.abc import Callable

from geogate.calls.keys import ProjectionKeys
from geogate.eventlog.append import Op
from schemas.events import Event

Projector = Callable[[Event, ProjectionKeys], list[Op]]

_PROJECTORS: dict[str, list[Projector]] = {}


def projector(*event_types: str) -> Callable[[Projector], Projector]:
    """Register a projector for the given event types."""

    def register(fn: Projector) -> Projector:
        for kind in event_types:
            _PROJECTORS.setdefault(kind, []).append(fn)
        return fn

    return register


def expire_finished(event: Event, keys: ProjectionKeys, *names: str, index: bool = True) -> list[Op]:
    """Expiry of a finished run's keys (`names`, with the event's aggregate index unless `index` is false)
    `finished_ttl_s` after `event`.

    The deadline comes from the event's own time, so a rebuild sets the same one (and drops what already lapsed).
    """
    if keys.finished_ttl_s is None:
        return []
    at_ms = int(event.ts.timestamp() * 1000) + keys.finished_ttl_s * 1000
    indexes = (keys.index(event.aggregate),) if index else ()
    return [Op("PEXPIREAT", name, (at_ms,)) for name in (*names, *indexes)]
