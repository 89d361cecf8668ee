"""The ops summary: counters and latency histograms per tool and stage, folded incrementally and rebuilt by replay."""

from datetime import timedelta
from typing import Any

import pytest

from geogate.calls import ops_feed
from geogate.calls.projections.ops import (
    KEEP_SLOTS,
    MAX_US,
    SLOT_S,
    Pending,
    bucket_of,
    epoch_us,
    field_bucket,
    field_calls,
    field_error,
    field_sandbox,
    field_sum,
    slot_of,
    whole_us,
)
from geogate.calls.store import EventStore
from geogate.eventlog.replay import replay
from schemas.events import Event, ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import new_id
from tests.unit.geogate.calls.ops_samples import T0, at, call, put


def totals(store: EventStore) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in store.redis.hgetall(store.live.ops_totals()).items()}


def test_calls_are_counted_per_tool_and_outcome(store: EventStore) -> None:
    call(store, "ping")
    call(store, "ping")
    call(store, "raster_info", fail="gdal.open_failed")

    assert ops_feed.catch_up(store.redis, store.keys) == 9
    got = totals(store)
    assert got[field_calls("ping", "requested")] == 2
    assert got[field_calls("ping", "succeeded")] == 2
    assert got[field_calls("raster_info", "failed")] == 1
    assert got[field_error("raster_info", "gdal.open_failed")] == 1
    assert field_calls("ping", "failed") not in got


def test_each_stage_lands_in_the_bucket_of_its_duration(store: EventStore) -> None:
    """queue 2 ms, run 10 ms, answer = request → outcome = 12 ms; sums are exact integer microseconds."""
    call(store, "ping", queue_ms=2.0, run_ms=10.0)
    ops_feed.catch_up(store.redis, store.keys)

    got = totals(store)
    assert got[field_bucket("ping", "queue", bucket_of(2.0))] == 1
    assert got[field_bucket("ping", "run", bucket_of(10.0))] == 1
    assert got[field_bucket("ping", "answer", bucket_of(12.0))] == 1
    assert (got[field_sum("ping", "queue")], got[field_sum("ping", "run")], got[field_sum("ping", "answer")]) == (
        2000,
        10000,
        12000,
    )
    assert bucket_of(2.0) != bucket_of(12.0)


def test_a_handled_call_answers_with_its_handler_and_counts_sandbox_failures(store: EventStore) -> None:
    call(store, "raster_stats", queue_ms=1.0, run_ms=20.0, handler="handler.timeout")
    ops_feed.catch_up(store.redis, store.keys)

    got = totals(store)
    assert got[field_sum("raster_stats", "handler")] == 5000  # tool.succeeded → handler.failed
    assert got[field_sum("raster_stats", "answer")] == 26000  # request → the handler's outcome
    assert got[field_calls("raster_stats", "handler_failed")] == 1
    assert got[field_sandbox("handler.timeout")] == 1
    assert store.redis.hlen(store.live.ops_pending()) == 0


def test_catching_up_twice_absorbs_only_new_events(store: EventStore) -> None:
    call(store, "ping")
    ops_feed.catch_up(store.redis, store.keys)
    assert ops_feed.catch_up(store.redis, store.keys) == 0
    call(store, "ping")

    assert ops_feed.catch_up(store.redis, store.keys) == 3
    assert totals(store)[field_calls("ping", "succeeded")] == 2
    assert int(store.redis.hget(store.live.ops_cursor(), "events")) == 6


def test_a_bounded_catch_up_ends_while_calls_keep_coming(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """`geogate status`, `trim` and `replay` on a busy cluster: a call lands during every step, so an unbounded catch-up
    would chase the log's end for ever; bounded, it stops once it has absorbed as much as the log held."""
    for _ in range(3):
        call(store, "ping")
    each_step = ops_feed.step

    def busy(*args: Any, **kwargs: Any) -> int:
        call(store, "ping")
        return each_step(*args, **kwargs)

    monkeypatch.setattr(ops_feed, "step", busy)
    assert ops_feed.catch_up(store.redis, store.keys, bounded=True) == 12  # the 9 there, and the 3 of the first step


def test_small_batches_fold_to_the_same_summary_as_one_pass(store: EventStore) -> None:
    for n in range(5):
        call(store, "ping", start_ms=n * 3.0, fail="x" if n == 2 else None)
    one_pass = store.keys.projections("one")
    ops_feed.catch_up(store.redis, store.keys, one_pass)
    while ops_feed.step(store.redis, store.keys, count=2):
        pass

    assert store.redis.hgetall(one_pass.ops_totals()) == store.redis.hgetall(store.live.ops_totals())
    assert store.redis.hgetall(one_pass.ops_pending()) == store.redis.hgetall(store.live.ops_pending())


def test_a_started_call_is_pending_with_its_worker_until_its_outcome(store: EventStore) -> None:
    cid = new_id()
    put(store, cid, ToolRequested(call_id=cid, tool="ping", queue="gdal", args={}, timeout_s=9), 0, "r")
    put(store, cid, ToolStarted(call_id=cid, worker="host:7", attempt="a", queue_wait_ms=1.0), 1, "s")
    ops_feed.catch_up(store.redis, store.keys)

    pending = Pending.loads(store.redis.hget(store.live.ops_pending(), cid))
    assert (pending.tool, pending.worker, pending.attempts) == ("ping", "host:7", 1)
    assert store.redis.hget(store.live.ops_workers(), "host:7") is not None

    put(store, cid, ToolSucceeded(call_id=cid, duration_ms=1.0, worker="host:7"), 3, "o")
    ops_feed.catch_up(store.redis, store.keys)
    assert store.redis.hget(store.live.ops_pending(), cid) is None


def test_slots_older_than_the_window_are_deleted_as_the_log_moves_on(store: EventStore) -> None:
    call(store, "ping", start_ms=0)
    later_ms = (KEEP_SLOTS + 3) * SLOT_S * 1000
    call(store, "ping", start_ms=later_ms)
    ops_feed.catch_up(store.redis, store.keys)

    first, last = slot_of(epoch_us(T0)), slot_of(epoch_us(at(later_ms)))
    assert not store.redis.exists(store.live.ops_slot(first))
    assert store.redis.exists(store.live.ops_slot(last))
    assert totals(store)[field_calls("ping", "succeeded")] == 2  # totals keep everything


def test_replay_rebuilds_the_ops_summary_identically(store: EventStore) -> None:
    call(store, "ping")
    call(store, "raster_info", fail="gdal.open_failed", handler=None)
    call(store, "raster_stats", handler="handler.memory")
    ops_feed.catch_up(store.redis, store.keys)
    before = totals(store)

    report = replay(store, swap=False)

    assert report.identical, (report.missing_live, report.extra_live, report.different)
    assert totals(store) == before


def test_events_are_folded_in_entry_id_order_across_streams_up_to_the_fullest_stream() -> None:
    """A stream that filled its read may hold older entries than another stream's tail: those wait."""
    from schemas.codec import encode

    def entry(entry_id: str) -> tuple[bytes, dict[bytes, bytes]]:
        data = ToolRequested(call_id="c", tool="ping", queue="gdal", args={}, timeout_s=1)
        event = Event(id="01" + "0" * 24, aggregate="call:c", ts=T0 + timedelta(0), trace_id="t", data=data)
        return entry_id.encode(), {b"event": encode(event)}

    reply = [(b"a", [entry("1-0"), entry("5-0")]), (b"b", [entry("2-0"), entry("9-0")]), (b"c", [entry("3-0")])]
    merged = ops_feed.merge(reply, count=2)
    assert [(e.stream, e.entry_id) for e in merged] == [("a", "1-0"), ("b", "2-0"), ("c", "3-0"), ("a", "5-0")]


def test_an_entry_this_process_cannot_decode_is_passed_over_not_blocking_the_summary(store: EventStore) -> None:
    """A newer event type (a rolling upgrade) must not stop the gateways' summary."""
    store.redis.xadd(store.keys.stream("calls"), {"type": "tool.teleported", "aggregate": "call:x", "event": b"\x81"})
    call(store, "ping")

    assert ops_feed.catch_up(store.redis, store.keys) == 4
    assert totals(store)[field_calls("ping", "succeeded")] == 1


def test_an_absurd_or_missing_duration_is_clamped_and_the_fold_goes_on(store: EventStore) -> None:
    """A huge or negative duration (a skewed clock, a hand-written event) used to make HINCRBY fail forever."""
    for n, absurd in enumerate((1e300, 1e18, -5.0)):
        cid = new_id()
        put(store, cid, ToolRequested(call_id=cid, tool="ping", queue="gdal", args={}, timeout_s=60), n, "req")
        put(store, cid, ToolStarted(call_id=cid, worker="w", attempt="a", queue_wait_ms=absurd), n + 1, "start")
        put(store, cid, ToolSucceeded(call_id=cid, result=None, duration_ms=absurd, worker="w"), n + 2, "out")
    call(store, "ping")

    assert ops_feed.catch_up(store.redis, store.keys) == 12
    got = totals(store)
    assert got[field_calls("ping", "succeeded")] == 4
    assert got[field_sum("ping", "queue")] == 2 * MAX_US + 2000
    assert got[field_sum("ping", "run")] == 2 * MAX_US + 10000
    metrics = store.redis.hgetall(store.live.metrics())
    assert int(metrics[b"duration_us_sum:tool.succeeded"]) == 2 * MAX_US + 10000
    assert (whole_us(float("inf")), whole_us(float("-inf")), whole_us(1.5)) == (MAX_US, 0, 1500)
