"""The event-store client shared by gateway and workers: settings, stream names, idempotent append, projections."""

from eventlog.errors import EventLogError
from eventlog.settings import Settings

__all__ = ["EventLogError", "Settings"]
