"""Back off on provider failures with exponential delays and full jitter (on tenacity); never model mistakes.

The retries are not left to the official `openai`/`anthropic` clients (checked against openai-python's
`_base_client.py`; the anthropic client is generated from the same base). They retry inside one `create()` call
with a sleep of their own and raise the last error without saying how many retries came before it (a count,
`retries_taken`, rides only on a successful raw response); they take `Retry-After` up to 60 s and ignore a longer
one. The loop records the retries on every `llm.attempted` event, the `provider_error` one included, and no wait
here passes `BackoffPolicy.max_s`, whatever the server asks (both shown in tests/unit/workers/llm/test_providers.py).
With the clients that would still need `max_retries=0` and this retry, plus two dependencies to send request
bodies the providers already build over httpx.
"""

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from workers.llm.config import BackoffPolicy
from workers.llm.errors import ProviderError

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]


def delay_s(policy: BackoffPolicy, retry: int, rand: float, retry_after_s: float | None = None) -> float:
    """Delay before 0-based `retry`: a random share of `base·2^retry`, at least `Retry-After`, at most `max_s`."""
    jittered = min(policy.max_s, policy.base_s * 2**retry) * rand
    return min(policy.max_s, max(jittered, retry_after_s or 0.0))


async def with_backoff(
    send: Callable[[], Awaitable[T]],
    policy: BackoffPolicy,
    *,
    sleep: Sleep = anyio.sleep,
    rand: Callable[[], float] = random.random,
) -> tuple[T, int]:
    """Call `send` until it succeeds, retrying retryable `ProviderError`s up to `policy.max_retries` times.

    Returns:
        The result and how many retries it took.

    Raises:
        ProviderError: a non-retryable failure, or the last one when the retries ran out.
    """

    def wait(state: RetryCallState) -> float:
        failed = state.outcome.exception() if state.outcome is not None else None
        retry_after_s = failed.retry_after_s if isinstance(failed, ProviderError) else None
        return delay_s(policy, state.attempt_number - 1, rand(), retry_after_s)

    retrying = AsyncRetrying(
        retry=retry_if_exception(lambda exc: isinstance(exc, ProviderError) and exc.retryable),
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=wait,
        sleep=sleep,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            retries = attempt.retry_state.attempt_number - 1
            try:
                return await send(), retries
            except ProviderError as exc:
                exc.retries = retries
                raise
    raise AssertionError("tenacity ends with a result or the last error")  # pragma: no cover
