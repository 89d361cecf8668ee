"""`workers.run.outcomes.OutcomeWaiter` across a Redis outage: one warning when it is lost, one when it is back, and the
outcomes written after it came back still reach their waiting jobs."""

import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from schemas.codec import encode
from schemas.events import ToolSucceeded
from tests.support import free_port, make_event, redis_server, wait_for
from workers.run import outcomes
from workers.run.outcomes import OutcomeWaiter


def test_the_waiter_says_once_that_it_lost_redis_and_delivers_once_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    retries = []

    def pause(seconds: float) -> None:  # the waiter's half-second pause between tries, shortened
        retries.append(seconds)
        time.sleep(0.01)

    monkeypatch.setattr(outcomes, "time", SimpleNamespace(sleep=pause))
    caplog.set_level(logging.WARNING, logger="workers.run.outcomes")
    port = free_port()
    client = redis.Redis(port=port, retry=Retry(NoBackoff(), 0))  # no retries of its own: the waiter's come at once
    with redis_server(tmp_path, port=port):
        waiter = OutcomeWaiter(client, "calls", block_ms=50)
    wait_for(lambda: len(retries) >= 5, what="the waiter to retry a few times")

    with redis_server(tmp_path, port=port), waiter.watch("c-1") as inbox:
        event = make_event("call:c-1", ToolSucceeded(call_id="c-1", result={"pong": True}))
        client.xadd("calls", {"type": "tool.succeeded", "aggregate": "call:c-1", "event": encode(event)})
        assert inbox.get(timeout=20).id == event.id
        said = [record.getMessage() for record in caplog.records]  # while Redis is up: stopping it is another outage
    assert sum("outcome waiter lost Redis" in line for line in said) == 1, said
    assert sum("outcome waiter reconnected" in line for line in said) == 1, said
