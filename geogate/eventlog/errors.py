"""Errors of the event-store client.

EventLogError
├── PreconditionFailed   an append's expectation on a projection did not hold (stale version, finished call)
└── BlobMissing          a referenced blob expired or never existed
"""


class EventLogError(Exception):
    """Base of every event-store error. `code` is stable; the message is for people."""

    code = "eventlog.error"


class PreconditionFailed(EventLogError):
    """The append was refused because a projection field did not have the expected value."""

    code = "eventlog.precondition_failed"

    def __init__(self, message: str, current: str | None) -> None:
        super().__init__(message)
        self.current = current


class BlobMissing(EventLogError, KeyError):
    """A blob reference points at nothing (expired or never written)."""

    code = "eventlog.blob_missing"
