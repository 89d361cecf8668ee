"""`replay --check` compares the namespaces inside Redis: one changed value is found and named with its family."""

import gc
from typing import Any

import pytest

from geogate.calls.store import EventStore
from geogate.eventlog.replay import compare, iter_log, rebuild, replay
from schemas.events import ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


def calls(store: EventStore, n: int) -> list[str]:
    made = []
    for _ in range(n):
        call_id = new_id()
        agg = call_aggregate(call_id)
        for data, key in (
            (ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=5), "r"),
            (ToolStarted(call_id=call_id, worker="w", attempt="a", queue_wait_ms=1), "s"),
            (ToolSucceeded(call_id=call_id, result={"n": 1}, duration_ms=2.0), "o"),
        ):
            store.append(make_event(agg, data), f"{call_id}:{key}")
        made.append(call_id)
    return made


KEY_OF = {
    "call": lambda store, c: store.live.call(c),
    "idx": lambda store, c: store.live.index(call_aggregate(c)),
    "metrics": lambda store, c: store.live.metrics(),
}


@pytest.mark.parametrize(
    ("family", "change"),
    [
        ("call", lambda r, key: r.hset(key, "status", "failed")),
        ("call", lambda r, key: r.hdel(key, "text")),
        ("idx", lambda r, key: r.rpush(key, "9-9")),
        ("metrics", lambda r, key: r.hincrby(key, "events:tool.started", 1)),
    ],
)
def test_one_changed_value_is_found_and_its_family_named(store: EventStore, family: str, change: Any) -> None:
    made = calls(store, 30)
    assert replay(store, swap=False).identical
    key = KEY_OF[family](store, made[17])

    change(store.redis, key)
    report = replay(store, swap=False)

    assert report.different == [key]
    assert report.families == [family] and not report.missing_live and not report.extra_live


def test_a_key_of_another_type_and_a_key_only_live_are_reported(store: EventStore) -> None:
    made = calls(store, 5)
    store.redis.delete(store.live.call(made[0]))
    store.redis.set(store.live.call(made[0]), "x")
    store.redis.hset(store.live.call("stray"), "status", "done")

    report = replay(store, swap=False)

    assert report.different == [store.live.call(made[0])]
    assert report.extra_live == [store.live.call("stray")]
    assert report.families == ["call"]


def test_the_fold_runs_without_the_cyclic_collector_and_gives_it_back(store: EventStore) -> None:
    calls(store, 3)
    seen: list[bool] = []

    def watched(events: list[Any]) -> Any:
        for stored in events:
            seen.append(gc.isenabled())
            yield stored

    fold = rebuild(store, store.keys.projections("rebuild"))
    stored = list(iter_log(store))
    assert fold.advance(watched(stored)) == len(stored) and seen == [False] * len(stored)
    assert gc.isenabled()

    def broken() -> Any:
        yield stored[0]
        raise RuntimeError("the log went away")

    with pytest.raises(RuntimeError):
        fold.advance(broken())
    assert gc.isenabled()
    gc.disable()
    try:
        fold.advance(iter(stored[:1]))
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_equal_content_written_in_another_order_is_the_same(store: EventStore) -> None:
    rebuilt, live = store.keys.projections("rebuild"), store.live
    fields = [(f"f{i}", "x" * (i % 90)) for i in range(300)]  # a long hash is stored as a hash table
    for key, order in (("call:a", fields[:3]), ("call:b", fields)):
        for field, value in order:
            store.redis.hset(rebuilt.base + ":" + key, field, value)
        for field, value in reversed(order):
            store.redis.hset(live.base + ":" + key, field, value)
        assert store.redis.dump(rebuilt.base + ":" + key) != store.redis.dump(live.base + ":" + key)
    store.redis.rpush(rebuilt.base + ":idx:c", "1-0", "2-0")
    store.redis.rpush(live.base + ":idx:c", "2-0", "1-0")

    report = compare(store, rebuilt, live)

    assert report.different == [live.base + ":idx:c"] and report.keys == 3


def test_small_batches_written_while_the_next_folds_rebuild_the_same_keys(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call's events lie batches apart, so its keys are written, let go and read back while later batches'
    writes are in flight."""
    made = [new_id() for _ in range(30)]
    for key, payload in (
        ("r", lambda c: ToolRequested(call_id=c, tool="ping", queue="gdal", args={"n": c}, timeout_s=5)),
        ("s", lambda c: ToolStarted(call_id=c, worker="w", attempt="a", queue_wait_ms=1)),
        ("t", lambda c: ToolStarted(call_id=c, worker="v", attempt="b", queue_wait_ms=1)),  # counts on the first
        ("o", lambda c: ToolSucceeded(call_id=c, result={"n": 1}, duration_ms=2.0)),
    ):
        for call_id in made:
            store.append(make_event(call_aggregate(call_id), payload(call_id)), f"{call_id}:{key}")
    monkeypatch.setattr("geogate.eventlog.replay.READ_BATCH", 4)

    report = replay(store, swap=False)

    assert report.identical and report.events == 120
    assert store.redis.hmget(store.live.call(made[3]), "status", "attempts") == [b"succeeded", b"2"]
