"""The gateway's ops-summary follower under a steady stream of calls: it lets events gather between steps.

Each step of the fold costs six round trips and a MULTI of some twenty writes on the gateway's event loop. Under a
steady load there is always an event or two more by the time a step ends; a follower that stepped again at once
made about one step per call instead of one per settle period.
"""

import time
from pathlib import Path

import anyio
import pytest
import redis
import redis.asyncio as aredis

from geogate.calls import ops_feed
from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from tests.support import redis_server, wait_for_key
from tests.unit.geogate.calls.ops_samples import call

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
CALLS = 300
SETTLE_S = 0.2


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_under_a_steady_stream_of_calls_the_summary_folds_once_a_settle_period_and_misses_nothing(
    tmp_path: Path,
) -> None:
    with redis_server(tmp_path) as url:  # a server of its own: its command counts are this test's alone
        store = EventStore(redis.Redis.from_url(url), Keys("follow"))
        client = aredis.Redis.from_url(url)

        def steady_calls() -> None:
            for n in range(CALLS):
                call(store, "ping", start_ms=n * 1.0)
                time.sleep(0.001)  # the load's pace (a call every millisecond or so), not a wait

        def absorbed() -> int:
            return int(store.redis.hget(store.live.ops_cursor(), "events") or 0)

        async with anyio.create_task_group() as group:
            group.start_soon(ops_feed.follow, client, store.keys, 1000, SETTLE_S)
            began = time.monotonic()
            await anyio.to_thread.run_sync(steady_calls)
            elapsed = time.monotonic() - began
            # woken by each write to the summary's cursor, bounded (the follower runs meanwhile)
            await anyio.to_thread.run_sync(
                lambda: wait_for_key(
                    store.redis,
                    store.live.ops_cursor(),
                    lambda: absorbed() >= CALLS * 3,
                    what="the summary to absorb the calls",
                    timeout_s=30,
                )
            )
            group.cancel_scope.cancel()
        await client.aclose()
        steps = int(store.redis.info("commandstats")["cmdstat_exec"]["calls"])
        total = absorbed()

    assert total == CALLS * 3  # each event absorbed once
    # one step a settle period while the calls came, one for the events of the last period, one spare
    assert 1 <= steps <= elapsed / SETTLE_S + 3, f"{steps} steps for {CALLS} calls in {elapsed:.2f} s"
