"""The event-store contract (docs/event-log.md), run against fakeredis and against a real redis-server."""

import time

import pytest

from geogate.calls import keys, ops_feed
from geogate.calls.store import EventStore
from geogate.eventlog import checkpoints
from geogate.eventlog.append import Expect, Op, Readback
from geogate.eventlog.errors import BlobMissing
from geogate.eventlog.replay import replay
from geogate.eventlog.retention import trim
from geogate.settings import RetentionPolicy
from schemas.events import (
    OutputRef,
    ToolCancelRequested,
    ToolFailed,
    ToolProgress,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


def request(store: EventStore, call_id: str | None = None) -> str:
    call_id = call_id or new_id()
    data = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={"delay_ms": 0}, timeout_s=5)
    store.append(make_event(call_aggregate(call_id), data), keys.requested_key(call_id))
    return call_id


def test_append_with_a_seen_dedupe_key_returns_the_first_entry_and_appends_nothing(store: EventStore) -> None:
    call_id = new_id()
    first = make_event(call_aggregate(call_id), ToolSucceeded(call_id=call_id, result={"n": 1}))
    second = make_event(call_aggregate(call_id), ToolFailed(call_id=call_id, code="x", message="late"))

    a = store.append(first, keys.outcome_key(call_id))
    b = store.append(second, keys.outcome_key(call_id))

    assert a.new and not b.new and b.entry_id == a.entry_id
    assert [e.type for e in store.read_aggregate(call_aggregate(call_id))] == ["tool.succeeded"]


def test_aggregate_reads_return_events_in_append_order(store: EventStore) -> None:
    call_id = request(store)
    agg = call_aggregate(call_id)
    store.append(make_event(agg, ToolStarted(call_id=call_id, worker="w", attempt="a", queue_wait_ms=1)), "s")
    store.append(make_event(agg, ToolProgress(call_id=call_id, progress=1, total=2)), "p")
    store.append(make_event(agg, ToolSucceeded(call_id=call_id, result=None)), keys.outcome_key(call_id))

    types = [e.type for e in store.read_aggregate(agg)]

    assert types == ["tool.requested", "tool.started", "tool.progress", "tool.succeeded"]


def test_call_projection_follows_the_lifecycle_and_ignores_progress_after_the_outcome(store: EventStore) -> None:
    call_id = request(store)
    agg = call_aggregate(call_id)
    store.append(make_event(agg, ToolStarted(call_id=call_id, worker="w:1", attempt="a", queue_wait_ms=1)), "s1")
    store.append(make_event(agg, ToolSucceeded(call_id=call_id, result={"ok": True}, text="fine")), "o")
    store.append(make_event(agg, ToolProgress(call_id=call_id, progress=5)), "late-progress")

    state = store.call_state(call_id)

    assert state is not None
    assert (state.status, state.result, state.text, state.attempts, state.worker) == (
        "succeeded",
        {"ok": True},
        "fine",
        1,
        "w:1",
    )


def test_an_unmet_expectation_refuses_the_append_and_reports_the_current_value(store: EventStore) -> None:
    call_id = request(store)
    agg = call_aggregate(call_id)
    store.append(make_event(agg, ToolFailed(call_id=call_id, code="c", message="m")), keys.outcome_key(call_id))
    key = store.live.call(call_id)

    result = store.append(
        make_event(agg, ToolStarted(call_id=call_id, worker="w", attempt="b", queue_wait_ms=0)),
        keys.started_key(call_id, "b"),
        expect=Expect(key, "status", "not_in", ("succeeded", "failed")),
    )

    assert result.refused and result.entry_id == "failed"
    assert [e.type for e in store.read_aggregate(agg)] == ["tool.requested", "tool.failed"]


def test_readback_returns_the_cancel_flag_in_the_same_round_trip(store: EventStore) -> None:
    call_id = request(store)
    agg = call_aggregate(call_id)
    store.append(make_event(agg, ToolCancelRequested(call_id=call_id)), keys.cancel_key(call_id))

    result = store.append(
        make_event(agg, ToolProgress(call_id=call_id, progress=1)),
        "p",
        readback=Readback(store.live.call(call_id), "cancel"),
    )

    assert result.readback == "1"


def test_effects_run_only_when_the_event_is_new(store: EventStore) -> None:
    call_id = new_id()
    event = make_event(
        call_aggregate(call_id), ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=1)
    )
    effect = Op("LPUSH", store.keys.prefix + ":q", ("message",))

    store.append(event, keys.requested_key(call_id), effects=[effect])
    store.append(event, keys.requested_key(call_id), effects=[effect])

    assert store.redis.llen(store.keys.prefix + ":q") == 1


def test_a_disallowed_op_is_rejected_before_reaching_redis() -> None:
    with pytest.raises(ValueError):
        Op("FLUSHALL", "k")


def test_blobs_round_trip_by_reference_and_a_missing_one_raises(store: EventStore) -> None:
    ref = store.put_blob(b'{"big": true}', ttl_s=60)

    assert store.get_blob(ref) == b'{"big": true}' and ref.size == 13 and ref.uri.endswith(ref.sha256)
    with pytest.raises(BlobMissing):
        store.get_blob(OutputRef(uri="blob://sha256:00", size=0, sha256="00"))


def test_replay_rebuilds_projections_identical_to_the_live_ones(store: EventStore) -> None:
    for n in range(30):
        call_id = request(store)
        agg = call_aggregate(call_id)
        store.append(make_event(agg, ToolStarted(call_id=call_id, worker="w", attempt="a", queue_wait_ms=n)), f"s{n}")
        outcome = (
            ToolSucceeded(call_id=call_id, result={"n": n}, duration_ms=n / 3)
            if n % 3
            else ToolFailed(call_id=call_id, code=f"e{n % 2}", message="no", duration_ms=n / 7)
        )
        store.append(make_event(agg, outcome), keys.outcome_key(call_id))
    ops_feed.catch_up(store.redis, store.keys)  # the live ops summary, which the gateways keep level with the log
    before = {
        k: store.redis.hgetall(k)
        for k in store.redis.scan_iter(match=store.live.pattern())
        if store.redis.type(k) == b"hash"
    }

    report = replay(store)

    assert report.identical and report.events == 90
    after = {
        k: store.redis.hgetall(k)
        for k in store.redis.scan_iter(match=store.live.pattern())
        if store.redis.type(k) == b"hash"
    }
    assert after == before


def test_replay_reports_a_projection_that_drifted_from_the_log(store: EventStore) -> None:
    call_id = request(store)
    store.redis.hset(store.live.call(call_id), "status", "tampered")

    report = replay(store, swap=False)

    assert report.different == [store.live.call(call_id)]
    assert store.redis.hget(store.live.call(call_id), "status") == b"tampered"


def test_trimming_by_age_never_passes_a_consumer_checkpoint(store: EventStore) -> None:
    ids = [request(store) for _ in range(5)]
    stream = store.keys.stream("calls")
    entries = store.read("calls")
    marks = checkpoints.marks("exporter", {stream: entries[1].entry_id})  # absorbed the first two only
    store.redis.hset(store.keys.checkpoints(), items=marks)

    removed = trim(store, RetentionPolicy(max_age_s=0), now_ms=10**13)

    assert removed[stream] == 2
    assert [e.event.data.call_id for e in store.read("calls")] == ids[2:]


def test_trimming_by_length_keeps_the_newest_entries(store: EventStore) -> None:
    ids = [request(store) for _ in range(6)]

    trim(store, RetentionPolicy(maxlen=4))

    assert [e.event.data.call_id for e in store.read("calls")] == ids[2:]


def test_expectations_are_checked_in_order_and_the_first_unmet_one_is_reported(store: EventStore) -> None:
    call_id = request(store)
    key = store.live.call(call_id)
    started = make_event(
        call_aggregate(call_id), ToolStarted(call_id=call_id, worker="w", attempt="a", queue_wait_ms=0)
    )
    checks = [
        Expect(key, "status", "not_in", ("succeeded", "failed")),
        Expect(key, "dispatch", "in", ("1",)),
        Expect(key, "attempts", "lt", ("1",)),
    ]

    first = store.append(started, keys.started_key(call_id, "a"), expect=checks)
    again = make_event(call_aggregate(call_id), ToolStarted(call_id=call_id, worker="w", attempt="b", queue_wait_ms=0))
    second = store.append(again, keys.started_key(call_id, "b"), expect=checks)
    stale = store.append(
        again, keys.started_key(call_id, "c"), expect=[checks[0], Expect(key, "dispatch", "in", ("2",))]
    )

    assert first.new and (second.refused, second.failed, second.entry_id) == (True, 3, "1")
    assert (stale.refused, stale.failed, stale.entry_id) == (True, 2, "1")
    assert [e.type for e in store.read_aggregate(call_aggregate(call_id))] == ["tool.requested", "tool.started"]


def test_a_silent_reader_stops_holding_the_log_back(store: EventStore) -> None:
    ids = [request(store) for _ in range(4)]
    stream = store.keys.stream("calls")
    first = store.read("calls")[0].entry_id
    long_ago = str(int(time.time() * 1000) - 3_600_000)
    store.redis.hset(store.keys.checkpoints(), mapping={f"gone|{stream}": first, "gone|@": long_ago})

    removed = trim(store, RetentionPolicy(maxlen=1, consumer_stale_s=60))

    assert removed[stream] == 3 and [e.event.data.call_id for e in store.read("calls")] == ids[3:]


def test_a_calls_dedupe_keys_are_one_hash_that_expires_and_still_dedupe(store: EventStore) -> None:
    call_id = request(store)
    agg = call_aggregate(call_id)
    started = ToolStarted(call_id=call_id, worker="w", attempt="a", queue_wait_ms=1)
    first = store.append(make_event(agg, started), keys.started_key(call_id, "a"))
    again = store.append(make_event(agg, started), keys.started_key(call_id, "a"))
    other = store.append(make_event(agg, ToolProgress(call_id=call_id, progress=1)), "progress-without-call-prefix")

    key, field = store.keys.dedupe_slot(keys.started_key(call_id, "a"))
    assert first.new and not again.new and again.entry_id == first.entry_id and other.new
    assert field == "started:a"
    assert sorted(store.redis.hkeys(key)) == [b"requested", b"started:a"]
    assert store.redis.hget(key, "started:a").decode() == first.entry_id
    assert 0 < store.redis.ttl(key) <= store.dedupe_ttl_s
    assert store.redis.type(store.keys.dedupe("progress-without-call-prefix")) == b"string"


def test_a_dedupe_key_written_before_the_per_call_hash_still_dedupes(store: EventStore) -> None:
    call_id = new_id()
    before_upgrade = store.keys.dedupe(keys.requested_key(call_id))  # the string key the old layout wrote
    store.redis.set(before_upgrade, "1-1")
    data = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=5)

    again = store.append(make_event(call_aggregate(call_id), data), keys.requested_key(call_id))

    assert not again.new and again.entry_id == "1-1"
    assert store.read_aggregate(call_aggregate(call_id)) == []
