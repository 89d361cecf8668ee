"""The event store: idempotent append, reads, the projections it is handed, replay and retention (docs/layout.md).

It knows no read model: its owner hands it a registry of projectors (`geogate.eventlog.projectors`).
"""

from geogate.eventlog.errors import EventLogError

__all__ = ["EventLogError"]
