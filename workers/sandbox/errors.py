"""Errors of the sandbox layer, rooted in the job error tree so a runner turns them into events.

JobFailed
└── SandboxError
    ├── SandboxUnavailable   no isolation could be started (probe failed, server would not come up); retryable
    └── HandlerFailed        the handler (not the tool) failed; carries a `HandlerError` with a stable code
"""

from schemas.result_handlers import HandlerError
from workers.jobkit.errors import JobFailed


class SandboxError(JobFailed):
    """Base of sandbox errors."""


class SandboxUnavailable(SandboxError):
    """The sandbox cannot run handlers on this host; another worker may be able to."""

    def __init__(self, message: str) -> None:
        super().__init__("sandbox.unavailable", message, retryable=True)


class HandlerFailed(SandboxError):
    """The handler failed; the tool's output is intact, so retrying with a fixed handler is cheap."""

    def __init__(self, error: HandlerError) -> None:
        super().__init__(error.code, error.message, retryable=False, field="result_handler")
        self.error = error
