"""Replay while calls keep arriving, and replay after trims, checked against what the appenders saw (real Redis).

The check does not use the code under test: each appender records, per aggregate, the events the store accepted
(append status 1) and each call's last outcome; the projections are then read with plain Redis commands.
"""

import random
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from geogate.calls import ops_feed
from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from geogate.eventlog.replay import replay
from geogate.eventlog.retention import trim
from geogate.eventlog.store import AppendResult
from geogate.settings import RetentionPolicy
from schemas.events import Event, ToolFailed, ToolStarted, ToolSucceeded
from schemas.ids import new_id
from tests.integration.test_replay import lifecycle

pytestmark = pytest.mark.integration


class RecordingStore(EventStore):
    """An EventStore that remembers what each append returned, as a client of the log sees it."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        super().__init__(client, keys)
        self.events: Counter[str] = Counter()
        self.started: Counter[str] = Counter()
        self.outcome: dict[str, str] = {}
        self.lock = threading.Lock()

    def append(self, event: Event, dedupe_key: str, **options: Any) -> AppendResult:
        result = super().append(event, dedupe_key, **options)
        if result.new:
            with self.lock:
                self.events[event.aggregate] += 1
                if isinstance(event.data, ToolStarted):
                    self.started[event.aggregate] += 1
                if isinstance(event.data, ToolSucceeded | ToolFailed):
                    self.outcome[event.aggregate] = "succeeded" if isinstance(event.data, ToolSucceeded) else "failed"
        return result


def assert_projections_match(client: redis.Redis, keys: Keys, seen: list[RecordingStore]) -> None:
    """Each aggregate's index holds exactly the events appended; each call's status and attempts are as appended."""
    live = keys.projections()
    for rec in seen:
        aggregates = sorted(rec.events)
        pipe = client.pipeline(transaction=False)
        for agg in aggregates:
            pipe.llen(live.index(agg))
            pipe.hmget(live.key(agg), "status", "attempts")
        replies = pipe.execute()
        for i, agg in enumerate(aggregates):
            length, (status, attempts) = replies[2 * i], replies[2 * i + 1]
            assert length == rec.events[agg], f"{agg}: index has {length} entries, {rec.events[agg]} appended"
            assert (status or b"").decode() == rec.outcome[agg], agg
            assert int(attempts or 0) == rec.started[agg], agg


@contextmanager
def load(url: str, keys: Keys, threads: int = 2) -> Iterator[tuple[list[RecordingStore], threading.Event]]:
    """Appenders running until the block ends; yields their records and an event set once each has appended."""
    stop, warm = threading.Event(), threading.Event()
    stores = [RecordingStore(redis.Redis.from_url(url), keys) for _ in range(threads)]
    errors: list[BaseException] = []

    def run(store: RecordingStore, seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                lifecycle(store, rng)
                if sum(store.events.values()) > 500:
                    warm.set()
        except BaseException as exc:  # surfaced below
            errors.append(exc)
            warm.set()

    workers = [threading.Thread(target=run, args=(s, i)) for i, s in enumerate(stores)]
    for w in workers:
        w.start()
    try:
        yield stores, warm
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=60)
    assert not errors, errors


def _fresh(url: str) -> tuple[EventStore, Keys]:
    keys = Keys(f"rl{new_id()[-8:]}")
    return EventStore(redis.Redis.from_url(url), keys), keys


def _check(store: EventStore) -> Any:
    ops_feed.catch_up(store.redis, store.keys)
    return replay(store, swap=False)


def test_replay_during_sustained_load_loses_and_doubles_nothing(redis_url: str) -> None:
    store, keys = _fresh(redis_url)
    with load(redis_url, keys) as (seen, warm):
        assert warm.wait(60)
        for _ in range(3):  # several swaps, each while both appenders run
            replay(store)
    report = _check(store)
    assert report.identical, (report.missing_live[:5], report.extra_live[:5], report.different[:5])
    assert_projections_match(store.redis, keys, seen)


def test_replay_check_holds_after_trims_and_more_calls(redis_url: str) -> None:
    store, keys = _fresh(redis_url)
    rec = RecordingStore(redis.Redis.from_url(redis_url), keys)
    rng = random.Random(3)
    for _ in range(3):  # trim, more calls, trim again…
        for _ in range(120):
            lifecycle(rec, rng)
        ops_feed.catch_up(store.redis, keys)
        removed = trim(store, RetentionPolicy(maxlen=300))
        assert sum(removed.values()) > 0
        for _ in range(20):
            lifecycle(rec, rng)
    report = _check(store)
    assert report.identical, (report.missing_live[:5], report.extra_live[:5], report.different[:5])
    replay(store)  # a swap from snapshot + log keeps every call as its client saw it
    assert_projections_match(store.redis, keys, [rec])
    assert _check(store).identical


def test_replay_during_load_after_a_trim(redis_url: str) -> None:
    store, keys = _fresh(redis_url)
    with load(redis_url, keys) as (seen, warm):
        assert warm.wait(60)
        # as far as the log reached (as `trim` and `replay` do): unbounded, it chased the appenders past the test's
        # timeout once, each step slower as the one trace all these calls share grew
        ops_feed.catch_up(store.redis, keys, bounded=True)
        trim(store, RetentionPolicy(maxlen=200))
        replay(store)
    report = _check(store)
    assert report.identical, (report.missing_live[:5], report.extra_live[:5], report.different[:5])
    assert_projections_match(store.redis, keys, seen)
