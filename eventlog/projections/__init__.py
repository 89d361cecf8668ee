"""Projections: pure folds from an event to the Redis writes that keep a read model current.

A projector reads only the event (never the clock, never Redis), so applying the same events in the same order
gives the same state: that is what lets `geogate replay` rebuild every read model from the log alone.
"""

from collections.abc import Callable

from eventlog.append import Op
from eventlog.streams import ProjectionKeys
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


def expire_finished(event: Event, keys: ProjectionKeys, *names: str) -> list[Op]:
    """Expiry of a finished run's keys (`names`, with the event's aggregate index) `finished_ttl_s` after `event`.

    The deadline comes from the event's own time, so a rebuild sets the same one (and drops what already lapsed).
    """
    if keys.finished_ttl_s is None:
        return []
    at_ms = int(event.ts.timestamp() * 1000) + keys.finished_ttl_s * 1000
    return [Op("PEXPIREAT", name, (at_ms,)) for name in (*names, keys.index(event.aggregate))]


def ops_for(event: Event, keys: ProjectionKeys) -> list[Op]:
    """Every projection write caused by `event`, in registration order."""
    ops: list[Op] = []
    for fn in _PROJECTORS.get(event.type, ()):
        ops += fn(event, keys)
    return ops


def _load_families() -> None:
    # Importing a family module registers its projectors.
    from eventlog.projections import (  # noqa: F401
        call_state,
        conversations,
        handlers,
        justifications,
        metrics,
        tasks,
        tiles,
        workflows,
    )


_load_families()
