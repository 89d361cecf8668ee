"""Back off on provider failures with exponential delays and full jitter; these are never model mistakes.

Kept here rather than taken from the official `openai`/`anthropic` clients (checked against openai-python's
`_base_client.py`; the anthropic client is generated from the same base). They retry inside one `create()` call
with a sleep of their own and raise the last error without saying how many retries came before it (a count,
`retries_taken`, rides only on a successful raw response); they take `Retry-After` up to 60 s and ignore a longer
one. The loop records the retries on every `llm.attempted` event, the `provider_error` one included, and no wait
here passes `BackoffPolicy.max_s`, whatever the server asks (both shown in tests/unit/workers/llm/test_providers.py).
With the clients that would still need `max_retries=0` and this loop, plus two dependencies to send request
bodies the providers already build over httpx.
"""

import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

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
    retry = 0
    while True:
        try:
            return await send(), retry
        except ProviderError as exc:
            if not exc.retryable or retry >= policy.max_retries:
                exc.retries = retry
                raise
            await sleep(delay_s(policy, retry, rand(), exc.retry_after_s))
            retry += 1
