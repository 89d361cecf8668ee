"""The per-client limiter in Redis: a one-minute window per client and scope, calls in progress, against fakeredis."""

import fakeredis
import pytest

from geogate.calls.keys import Keys
from geogate.ratelimit import Limiter, Limits

pytestmark = pytest.mark.anyio


async def test_requests_over_the_limit_are_refused_until_the_window_expires() -> None:
    redis, keys = fakeredis.FakeAsyncRedis(), Keys("t")
    limiter = Limiter(redis, keys, "llm", count_refused=True)
    two = Limits(per_minute=2)

    assert (await limiter.acquire("alice", two)).allowed
    assert (await limiter.acquire("alice", two)).allowed
    refused = await limiter.acquire("alice", two)
    other = await limiter.acquire("bob", two)

    window = keys.rate("llm", "alice", 60)
    assert not refused.allowed and refused.reason == "rate_limit" and 0 < refused.retry_after_s <= 60
    assert other.allowed
    assert 0 < await redis.ttl(window) <= 60
    await redis.delete(window)  # what expiry does at the end of the window
    assert (await limiter.acquire("alice", two)).count == 1


async def test_refused_calls_count_against_the_window_only_when_the_caller_says_so() -> None:
    redis, keys = fakeredis.FakeAsyncRedis(), Keys("t")
    one = Limits(per_minute=1)
    counting = Limiter(redis, keys, "llm", count_refused=True)
    lenient = Limiter(redis, keys, "calls")

    for limiter in (counting, lenient):
        await limiter.acquire("alice", one)
        await limiter.acquire("alice", one)
        await limiter.acquire("alice", one)

    assert int(await redis.get(keys.rate("llm", "alice", 60))) == 3
    assert int(await redis.get(keys.rate("calls", "alice", 60))) == 1


async def test_a_batch_of_calls_is_taken_whole_or_refused_whole() -> None:
    redis, keys = fakeredis.FakeAsyncRedis(), Keys("t")
    limiter = Limiter(redis, keys, "calls")
    three = Limits(per_minute=3)

    assert (await limiter.acquire("alice", three, calls=2)).allowed
    assert not (await limiter.acquire("alice", three, calls=2)).allowed
    assert (await limiter.acquire("alice", three, calls=1)).count == 3


async def test_calls_in_progress_are_limited_and_given_back() -> None:
    redis, keys = fakeredis.FakeAsyncRedis(), Keys("t")
    limiter = Limiter(redis, keys, "calls", stale_s=60)
    one = Limits(concurrent=1)

    first = await limiter.acquire("alice", one)
    refused = await limiter.acquire("alice", one)
    await limiter.release("alice", first)
    after = await limiter.acquire("alice", one)

    assert first.allowed and len(first.slots) == 1
    assert (refused.allowed, refused.reason, refused.retry_after_s) == (False, "concurrency", 1)
    assert after.allowed
    assert not await redis.exists(keys.rate("calls", "alice", 60))  # no per-minute limit, no window


async def test_a_slot_held_past_stale_s_is_taken_for_a_dead_process_leftover() -> None:
    redis, keys = fakeredis.FakeAsyncRedis(), Keys("t")
    one = Limits(concurrent=1)
    await redis.zadd(keys.in_flight("alice"), {"dead:1": 0})  # started at the epoch by a process long gone

    assert (await Limiter(redis, keys, "calls", stale_s=60).acquire("alice", one)).allowed


async def test_a_call_refused_for_concurrency_is_not_counted_in_the_window() -> None:
    redis, keys = fakeredis.FakeAsyncRedis(), Keys("t")
    limiter = Limiter(redis, keys, "calls", stale_s=60)
    both = Limits(per_minute=5, concurrent=1)

    await limiter.acquire("alice", both)
    refused = await limiter.acquire("alice", both)

    assert refused.reason == "concurrency"
    assert int(await redis.get(keys.rate("calls", "alice", 60))) == 1


async def test_a_concurrency_limit_needs_stale_s() -> None:
    limiter = Limiter(fakeredis.FakeAsyncRedis(), Keys("t"), "llm")

    with pytest.raises(ValueError, match="stale_s"):
        await limiter.acquire("alice", Limits(concurrent=1))
