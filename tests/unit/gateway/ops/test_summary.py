"""Reading the summary: workers from their liveness keys (with the calls they hold), queues with their oldest job."""

import json
from datetime import UTC, datetime, timedelta

import fakeredis
import pytest

from gateway.ops.summary import read_summary, series
from geogate.calls import ops_feed
from geogate.calls.keys import Keys, celery_queue_key
from geogate.calls.publish import enqueue_op, request_event
from geogate.calls.store import EventStore
from schemas.ids import new_id
from schemas.tools import TOOLS
from tests.unit.geogate.calls.ops_samples import T0, call

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clients() -> tuple[EventStore, fakeredis.FakeAsyncRedis]:
    server, keys = fakeredis.FakeServer(), Keys(f"t{new_id()[-6:]}")
    return EventStore(fakeredis.FakeRedis(server=server), keys), fakeredis.FakeAsyncRedis(server=server)


async def test_a_worker_with_a_lease_is_listed_with_its_queues_and_the_calls_it_holds(clients) -> None:
    store, client = clients
    beat = (NOW - timedelta(seconds=2)).isoformat()
    lease = {"lease": "L1", "host": "box", "pid": 42, "queues": ["gdal"], "pool": "prefork", "concurrency": 2}
    store.redis.set(store.keys.lease("L1"), json.dumps(lease | {"started_at": beat, "beat_at": beat}), ex=30)
    held = {"lease": "L1", "worker": "box:42", "attempt": "a", "tool": "ping", "started_at": beat}
    store.redis.hset(store.live.key("running"), "c1", json.dumps(held))

    summary = await read_summary(client, store.keys, "5m", now=NOW.timestamp())

    [worker] = [w for w in summary.workers if w.source == "lease"]
    assert (worker.name, worker.queues, worker.concurrency, worker.holding) == ("box:42", ["gdal"], 2, ["c1"])
    assert worker.age_s == pytest.approx(2.0)


async def test_without_leases_a_worker_seen_in_the_log_is_listed_for_five_minutes(clients) -> None:
    store, client = clients
    call(store, "ping", worker="vm:9")  # its events are dated T0
    ops_feed.catch_up(store.redis, store.keys)

    soon = await read_summary(client, store.keys, "all", now=T0.timestamp() + 10)
    later = await read_summary(client, store.keys, "all", now=T0.timestamp() + 3600)

    assert [(w.name, w.source, w.holding) for w in soon.workers] == [("vm:9", "log", [])]
    assert later.workers == []


async def test_a_queue_shows_its_depth_and_the_age_of_its_oldest_job(clients) -> None:
    store, client = clients
    first = request_event(TOOLS["ping"], {"queue": "gdal"}, call_id=new_id(), actor="t")
    second = request_event(TOOLS["ping"], {"queue": "gdal"}, call_id=new_id(), actor="t")
    for event in (first, second):
        op = enqueue_op(event)
        store.redis.lpush(celery_queue_key("gdal"), *op.args)

    summary = await read_summary(client, store.keys, "5m", now=first.ts.timestamp() + 7)

    gdal = next(q for q in summary.queues if q.queue == "gdal")
    assert gdal.depth == 2 and gdal.oldest_age_s == pytest.approx(7.0, abs=0.01)


async def test_a_queue_s_depth_and_oldest_job_count_its_waiting_tiles_too(clients) -> None:
    store, client = clients
    tile = request_event(TOOLS["ping"], {"queue": "gdal"}, call_id=f"{new_id()}.0", actor="t")  # a tile's id
    later = request_event(TOOLS["ping"], {"queue": "gdal"}, call_id=new_id(), actor="t")
    for event in (tile, later):
        op = enqueue_op(event)
        store.redis.execute_command(op.name, op.key, *op.args)

    summary = await read_summary(client, store.keys, "5m", now=tile.ts.timestamp() + 7)

    gdal = next(q for q in summary.queues if q.queue == "gdal")
    assert store.redis.llen(celery_queue_key("gdal")) == 1  # the tile waits on a list of its own
    assert gdal.depth == 2 and gdal.oldest_age_s == pytest.approx(7.0, abs=0.01)


async def test_the_gateways_async_step_folds_what_one_synchronous_pass_folds(clients) -> None:
    store, client = clients
    for n in range(40):
        call(store, "ping", start_ms=n * 2.0, fail="x" if n % 7 == 0 else None)
    one_pass = store.keys.projections("one")
    ops_feed.catch_up(store.redis, store.keys, one_pass)

    absorbed = await ops_feed.astep(client, store.keys)

    assert absorbed == int(store.redis.hget(one_pass.ops_cursor(), "events")) == 40 * 3
    assert store.redis.hgetall(one_pass.ops_totals()) == store.redis.hgetall(store.live.ops_totals())
    assert store.redis.hgetall(one_pass.ops_pending()) == store.redis.hgetall(store.live.ops_pending())


def test_the_rate_chart_draws_failures_apart_from_the_callers_errors() -> None:
    """Rows: succeeded and failed per tool, then the caller-error counters (`read_series`)."""
    rows = [[8, 3, 2], [None, None, None]]  # one tool: 8 succeeded, 3 failed of which 2 the caller's

    drawn = series([0, 1], ["raster_info"], rows)

    assert drawn.lines["raster_info"] == [1.1, 0.0]
    assert drawn.lines["failures"] == [0.1, 0.0] and drawn.lines["caller errors"] == [0.2, 0.0]
