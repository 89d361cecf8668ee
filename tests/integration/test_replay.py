"""`geogate replay` on a log of more than 10,000 events reproduces the live projections exactly (real Redis)."""

import os
import random
import subprocess
import sys

import pytest
import redis

from geogate.calls import keys, ops_feed
from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from geogate.eventlog import replay as replay_module
from geogate.eventlog.replay import COMPARE_PAIRS, replay
from schemas.events import (
    ToolCancelRequested,
    ToolFailed,
    ToolProgress,
    ToolRedispatched,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.ids import call_aggregate, new_id
from tests.support import make_event

pytestmark = pytest.mark.integration


def lifecycle(store: EventStore, rng: random.Random) -> int:
    """One call with a realistic mix of events (redeliveries, progress, cancels, failures); returns events added."""
    call_id = new_id()
    agg = call_aggregate(call_id)
    events = [
        (
            ToolRequested(
                call_id=call_id,
                tool=rng.choice(["ping", "raster_info"]),
                queue="gdal",
                args={"n": rng.randint(0, 9)},
                timeout_s=30,
            ),
            keys.requested_key(call_id),
        )
    ]
    for attempt in range(rng.choice([1, 1, 1, 2])):
        events.append(
            (
                ToolStarted(
                    call_id=call_id,
                    worker=f"w:{attempt}",
                    attempt=str(attempt),
                    queue_wait_ms=rng.random() * 5,
                    lease=f"l{attempt}",
                ),
                keys.started_key(call_id, str(attempt)),
            )
        )
        events += [(ToolProgress(call_id=call_id, progress=p, total=3), f"{call_id}:p{attempt}{p}") for p in (1, 2)]
        if attempt == 0 and rng.random() < 0.3:  # its worker's lease lapsed: the reaper put it back on the queue
            lost = ToolRedispatched(
                call_id=call_id, dispatch=2, lost_worker="w:0", lost_lease="l0", lost_attempt="0", reason="lapsed"
            )
            events.append((lost, keys.redispatch_key(call_id, "0")))
    if rng.random() < 0.1:
        events.append((ToolCancelRequested(call_id=call_id), keys.cancel_key(call_id)))
    if rng.random() < 0.2:
        outcome = ToolFailed(
            call_id=call_id,
            code=rng.choice(["path.not_found", "cancelled"]),
            message="no",
            duration_ms=rng.random() * 100,
        )
    else:
        outcome = ToolSucceeded(call_id=call_id, result={"v": rng.random()}, text="ok", duration_ms=rng.random() * 9)
    events.append((outcome, keys.outcome_key(call_id)))
    for data, key in events:
        store.append(make_event(agg, data, actor=rng.choice(["alice", "bob"])), key)
    return len(events)


def test_replay_of_more_than_ten_thousand_events_equals_the_live_projections(redis_url: str) -> None:
    store = EventStore(redis.Redis.from_url(redis_url), Keys(f"replay{new_id()[-6:]}"))
    rng = random.Random(7)
    total = 0
    while total < 10_000:
        total += lifecycle(store, rng)
    ops_feed.catch_up(store.redis, store.keys)  # the live ops summary, which the gateways keep level with the log
    live = {k: store.redis.dump(k) for k in store.redis.scan_iter(match=store.live.pattern())}

    report = replay(store)

    assert report.events == total >= 10_000 and report.identical
    assert {k: store.redis.dump(k) for k in store.redis.scan_iter(match=store.live.pattern())}.keys() == live.keys()


def test_geogate_replay_check_exits_zero_when_projections_match(stack_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "geogate.cli", "replay", "--check"],
        env=stack_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "identical" in done.stdout


def test_replay_reports_its_way_through_each_phase(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_module, "READ_BATCH", 500)
    store = EventStore(redis.Redis.from_url(redis_url), Keys(f"replay{new_id()[-6:]}"))
    rng = random.Random(11)
    total = 0
    while total < 1_800:
        total += lifecycle(store, rng)
    ops_feed.catch_up(store.redis, store.keys)
    heard: list[tuple[str, int, int]] = []

    report = replay(store, progress=lambda phase, done, of: heard.append((phase, done, of)))

    rebuild = [(done, of) for phase, done, of in heard if phase == "rebuild"]
    assert [done for done, _ in rebuild] == [*range(500, total, 500), total]  # one report a batch
    assert {of for _, of in rebuild} == {total}  # the log's length when the replay began
    compare = [(done, of) for phase, done, of in heard if phase == "compare"]  # a report per script call
    assert [done for done, _ in compare] == [*range(COMPARE_PAIRS, report.keys, COMPARE_PAIRS), report.keys]
    assert {of for _, of in compare} == {report.keys}
    assert [phase for phase, _, _ in heard] == ["rebuild"] * len(rebuild) + ["compare"] * len(compare) + ["swap"]
    assert heard[-1] == ("swap", report.keys, report.keys)


def test_geogate_replay_says_its_progress_on_standard_error_and_its_result_on_standard_output(redis_url: str) -> None:
    prefix = f"cli{new_id()[-6:]}"
    store = EventStore(redis.Redis.from_url(redis_url), Keys(prefix))
    total = sum(lifecycle(store, random.Random(3)) for _ in range(20))
    env = {**os.environ, "REDIS_URL": redis_url, "GEOGATE_PREFIX": prefix, "GEOGATE_LOG_LEVEL": "WARNING"}

    done = subprocess.run(
        [sys.executable, "-m", "geogate.cli", "replay"], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("replay: ")]
    assert said[0].startswith(f"replay: rebuild {total} of {total} events (100%")
    assert [line.split()[1] for line in said] == ["rebuild", "compare", "swap"]
    assert done.stdout.splitlines()[0].startswith(f"replayed {total} events")
    assert "replay:" not in done.stdout
