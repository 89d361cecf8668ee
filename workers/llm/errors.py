"""Errors of the LLM host.

LLMError
└── ProviderError        the model's server failed (HTTP status, timeout, bad body); `retryable` for 429/5xx/timeouts
"""


class LLMError(Exception):
    """Base of LLM host errors: a stable `code` and whether trying again could help."""

    def __init__(self, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable


class ProviderError(LLMError):
    """The provider did not give a usable reply. Never counted as a model mistake."""

    def __init__(self, code: str, message: str, *, retryable: bool, retry_after_s: float | None = None) -> None:
        super().__init__(code, message, retryable=retryable)
        self.retry_after_s = retry_after_s
        self.retries = 0
        """Backed-off attempts before this error was given up on."""
