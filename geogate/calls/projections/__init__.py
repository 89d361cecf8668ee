"""Projections: pure folds from an event to the Redis writes that keep a read model current.

A projector reads only the event (never the clock, never Redis), so applying the same events in the same order
gives the same state: that is what lets `geogate replay` rebuild every read model from the log alone.
"""

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.registry import _PROJECTORS, Projector, expire_finished, projector
from geogate.eventlog.append import Op
from schemas.events import Event

__all__ = ["Projector", "expire_finished", "ops_for", "projector"]


def ops_for(event: Event, keys: ProjectionKeys) -> list[Op]:
    """Every projection write caused by `event`, in registration order."""
    ops: list[Op] = []
    for fn in _PROJECTORS.get(event.type, ()):
        ops += fn(event, keys)
    return ops


def _load_families() -> None:
    # Importing a family module registers its projectors.
    from geogate.calls.projections import (  # noqa: F401
        call_state,
        conversations,
        handlers,
        justifications,
        metrics,
        tasks,
        tiles,
        workflows,
        writers,
    )


_load_families()
