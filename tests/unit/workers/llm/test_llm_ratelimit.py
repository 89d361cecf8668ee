"""Per-client rate limit per minute in Redis (INCR + EXPIRE), against fakeredis (issue 7 item 4)."""

import fakeredis
import pytest

from workers.llm import RateLimited, RateLimiter

pytestmark = pytest.mark.anyio


async def test_requests_over_the_limit_are_refused_until_the_window_expires() -> None:
    redis = fakeredis.FakeAsyncRedis()
    limiter = RateLimiter(redis, limit_per_minute=2)

    await limiter.check("llm:rate:alice")
    await limiter.check("llm:rate:alice")
    with pytest.raises(RateLimited) as caught:
        await limiter.check("llm:rate:alice")
    await limiter.check("llm:rate:bob")

    assert caught.value.code == "llm.rate_limited" and 0 < caught.value.retry_after_s <= 60
    assert 0 < await redis.ttl("llm:rate:alice") <= 60
    await redis.delete("llm:rate:alice")  # what expiry does at the end of the window
    assert (await limiter.check("llm:rate:alice")).count == 1
