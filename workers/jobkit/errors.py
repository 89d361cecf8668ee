"""Errors a job raises; the runner turns them into `tool.failed` events.

JobError
├── JobFailed      the job cannot produce a result (bad input, unreadable file, GDAL error); `retryable` says
│                  whether trying again could help
├── JobCancelled   the call was cancelled; raised between blocks of work
└── JobSuperseded  this attempt lost its lease and the call was re-dispatched; nothing it does counts any more
"""


class JobError(Exception):
    """Base of job errors: a stable `code`, a message for people and models, the argument it is about."""

    def __init__(
        self, code: str, message: str, *, retryable: bool = False, field: str | None = None, details: object = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.field = field
        self.details = details
        """JSON a client may act on (a failed tile's index and window), carried by `tool.failed`."""


class JobFailed(JobError):
    """The job failed; the message says what to change."""


class JobCancelled(JobError):
    """The call was cancelled while the job ran."""

    def __init__(self, message: str = "the call was cancelled") -> None:
        super().__init__("cancelled", message)


class JobSuperseded(JobError):
    """This attempt is no longer the call's current one (its worker's lease lapsed and the call was re-dispatched).

    Raised between blocks of work and before an output is renamed into place; the runner's late appends are
    refused anyway, so the attempt ends without an outcome and without touching the output path.
    """

    def __init__(self, call_id: str, attempt: str) -> None:
        super().__init__("attempt.superseded", f"attempt {attempt} of call {call_id} was superseded by a re-dispatch")
