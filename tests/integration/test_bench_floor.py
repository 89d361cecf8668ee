"""The benches' event-sourced floor (bench/hop.py with the log, bench/_hoplog.py) does the work it claims to.

`make bench` sets Geogate against the same ping behind one Celery hop with the log's three appends; that floor is
only worth its name if each call really makes those appends, fenced as Geogate's worker fences them.
"""

import sys
import uuid
from pathlib import Path

import anyio
import msgpack
import pytest
import redis
from mcp import Client

pytestmark = pytest.mark.integration

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import _hoplog  # noqa: E402
from hop import hop_stack  # noqa: E402


def test_each_call_through_the_logged_hop_appends_requested_started_succeeded() -> None:
    async def three_pings(url: str) -> list[dict[str, object]]:
        async with Client(url) as client:
            results = [await client.call_tool("ping", {}) for _ in range(3)]
        assert not any(r.is_error for r in results)
        return [r.structured_content or {} for r in results]

    with hop_stack(workers=1, logged=True) as url:
        answers = anyio.run(three_pings, url)
        client = redis.Redis.from_url(url.redis)
        by_call: dict[str, list[str]] = {}
        for _, fields in client.xrange(_hoplog.STREAM):
            event = msgpack.unpackb(fields[b"event"], raw=False)
            by_call.setdefault(event["call_id"], []).append(event["type"])
        states = [client.hgetall(_hoplog.call_key(call)) for call in by_call]

    assert [answer["pong"] for answer in answers] == [True, True, True]
    assert list(by_call.values()) == [["tool.requested", "tool.started", "tool.succeeded"]] * 3
    assert all(state[b"status"] == b"succeeded" and state[b"attempts"] == b"1" for state in states)


def test_the_floors_appends_are_fenced_as_a_workers(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    append, token = _hoplog.appender(client), uuid.uuid4().hex

    def start(attempt: str) -> int:
        return append(token, "tool.started", {"attempt": attempt}, _hoplog.started(token, attempt))

    assert append(token, "tool.requested", {}, _hoplog.requested(token, f"queue-{token}", b"message")) == 1
    assert client.lrange(f"queue-{token}", 0, -1) == [b"message"]
    assert [start("a"), start("a"), start("b"), start("c"), start("d")] == [1, 0, 1, 1, -1]  # duplicate; attempts used
    assert append(token, "tool.succeeded", {}, _hoplog.succeeded(token, "b")) == -1  # not the current attempt
    assert append(token, "tool.succeeded", {}, _hoplog.succeeded(token, "c")) == 1
    assert client.hget(_hoplog.call_key(token), "status") == b"succeeded"

    ended = uuid.uuid4().hex
    append(ended, "tool.requested", {}, _hoplog.requested(ended, f"queue-{ended}", b"message"))
    client.hset(_hoplog.call_key(ended), "status", "cancelled")
    assert append(ended, "tool.started", {"attempt": "a"}, _hoplog.started(ended, "a")) == -1  # the call has ended
