"""The event store: idempotent append, reads, projections, replay and retention of the log (docs/layout.md)."""

from geogate.eventlog.errors import EventLogError

__all__ = ["EventLogError"]
