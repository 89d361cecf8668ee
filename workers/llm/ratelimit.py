"""Per-client requests-per-minute limit in Redis: INCR and EXPIRE on a key the caller names.

This limits Geogate's own clients; the provider's 429s and `Retry-After` are retried in `providers/backoff.py`.
"""

from dataclasses import dataclass

from redis.asyncio import Redis

from workers.llm.errors import RateLimited

WINDOW_S = 60


@dataclass(frozen=True)
class RateDecision:
    """Whether a request may go ahead, how many were counted this window, and when the window resets."""

    allowed: bool
    count: int
    retry_after_s: float


class RateLimiter:
    """A fixed one-minute window per key; the first INCR of a window sets its expiry (EXPIRE NX, atomically)."""

    def __init__(self, redis: "Redis", limit_per_minute: int) -> None:
        self._redis = redis
        self.limit = limit_per_minute

    async def hit(self, key: str) -> RateDecision:
        """Count one request under `key` (e.g. the client id's key from the key owner module)."""
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, WINDOW_S, nx=True)
            pipe.ttl(key)
            count, _, ttl = await pipe.execute()
        return RateDecision(int(count) <= self.limit, int(count), float(ttl if ttl and ttl > 0 else WINDOW_S))

    async def check(self, key: str) -> RateDecision:
        """Count one request and refuse it when over the limit.

        Raises:
            RateLimited: more than `limit_per_minute` requests under `key` this window.
        """
        decision = await self.hit(key)
        if not decision.allowed:
            raise RateLimited(key, self.limit, decision.retry_after_s)
        return decision
