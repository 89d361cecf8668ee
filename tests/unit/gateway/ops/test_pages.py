"""The `/ops` pages over a log on fakeredis: figures match the log, a call's page lists its events in order."""

import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import fakeredis
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from gateway.ops.reads import TailFilter
from gateway.ops.routes import OpsRoutes
from geogate.calls import ops_feed
from geogate.calls.keys import Keys
from geogate.calls.store import AsyncEventStore, EventStore
from geogate.settings import Settings
from schemas.events import ToolFailed, ToolRequested, ToolSucceeded, WorkflowStarted, WorkflowThoughtSubmitted
from schemas.ids import new_id
from tests.support import make_event
from tests.unit.geogate.calls.ops_samples import call, put

if TYPE_CHECKING:
    from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Runtime:
    """The part of the gateway runtime the ops routes use: its async store."""

    def __init__(self, store: AsyncEventStore) -> None:
        self.store = store
        self.settings = Settings(redis_url="redis://unused")


@pytest.fixture
def stores() -> tuple[EventStore, OpsRoutes]:
    server, keys = fakeredis.FakeServer(), Keys(f"t{new_id()[-6:]}")
    sync = EventStore(fakeredis.FakeRedis(server=server), keys)
    runtime = Runtime(AsyncEventStore(fakeredis.FakeAsyncRedis(server=server), keys))
    return sync, OpsRoutes(cast("Gateway", runtime))


def app(ops: OpsRoutes) -> Starlette:
    return Starlette(
        routes=[
            Route("/ops", ops.dashboard),
            Route("/ops/panels", ops.panels),
            Route("/ops/api/summary", ops.summary_json),
            Route("/ops/calls/{call_id}", ops.call),
            Route("/ops/workflows/{state_id}", ops.workflow),
            Route("/ops/static/{name:path}", ops.static),
        ]
    )


async def get(ops: OpsRoutes, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app(ops))
    async with httpx.AsyncClient(transport=transport, base_url="http://ops") as client:
        return await client.get(path)


def log_counts(store: EventStore) -> Counter[tuple[str, str]]:
    """(tool, outcome) counted from the log itself, the figure the page must show."""
    tools, counts = {}, Counter()
    for stored in store.read("calls"):
        data = stored.event.data
        if isinstance(data, ToolRequested):
            tools[data.call_id] = data.tool
        elif isinstance(data, ToolSucceeded | ToolFailed):
            counts[tools[data.call_id], "succeeded" if isinstance(data, ToolSucceeded) else "failed"] += 1
    return counts


def cell(html: str, tool: str, field: str) -> int:
    row = re.search(rf'<tr data-tool="{re.escape(tool)}">(.*?)</tr>', html, re.S)
    assert row, f"no row for {tool}"
    value = re.search(rf'data-field="{field}">([\d,]+)<', row.group(1))
    assert value, f"no {field} cell for {tool}"
    return int(value.group(1).replace(",", ""))


async def test_the_dashboard_shows_the_calls_per_tool_and_errors_the_log_holds(stores) -> None:
    store, ops = stores
    for n in range(4):
        call(store, "ping", start_ms=n)
    call(store, "raster_info", fail="path.not_found")
    call(store, "raster_info", fail="path.not_found")
    call(store, "raster_info")
    ops_feed.catch_up(store.redis, store.keys)

    page = await get(ops, "/ops?window=all")

    assert page.status_code == 200
    for (tool, outcome), count in log_counts(store).items():
        if outcome == "failed":  # all of them the caller's: a path that is not there
            assert (cell(page.text, tool, "caller_errors"), cell(page.text, tool, "failures")) == (count, 0)
        else:
            assert cell(page.text, tool, outcome) == count
    assert re.search(r'data-error="path.not_found">.*?>2<', page.text, re.S)
    assert page.text.count('class="ev ') == 21  # the tail: every event, newest first


def tile(html: str, kpi: str) -> tuple[int, str]:
    """A headline tile's figure and the line under it."""
    found = re.search(rf'id="kpi-{kpi}">([\d,]+)</div>\s*<div class="sub">(.*?)</div>', html, re.S)
    assert found, f"no {kpi} tile"
    return int(found.group(1).replace(",", "")), found.group(2)


async def test_the_callers_errors_are_counted_apart_from_failures(stores) -> None:
    store, ops = stores
    for code in ("output.exists", "band.out_of_range", "path.not_found", "args.invalid"):
        call(store, "raster_convert", fail=code)
    call(store, "raster_convert", fail="gdal.write_failed")
    for _ in range(5):
        call(store, "raster_convert")
    ops_feed.catch_up(store.redis, store.keys)

    page = (await get(ops, "/ops?window=all")).text

    failures, said = tile(page, "failures")
    assert failures == 1 and "10.0%" in said
    assert tile(page, "caller-errors")[0] == 4
    assert (cell(page, "raster_convert", "caller_errors"), cell(page, "raster_convert", "failures")) == (4, 1)
    assert re.search(r'data-error="output.exists">.*?caller.*?>1<', page, re.S)
    assert re.search(r'data-error="gdal.write_failed">.*?failure.*?>1<', page, re.S)


async def test_the_workers_tile_says_how_many_run_in_plain_words(stores) -> None:
    store, ops = stores
    beat = datetime.now(UTC).isoformat()
    lease = {"lease": "L1", "host": "box", "pid": 42, "queues": ["gdal"], "pool": "prefork", "concurrency": 2}
    store.redis.set(store.keys.lease("L1"), json.dumps(lease | {"started_at": beat, "beat_at": beat}), ex=30)

    page = (await get(ops, "/ops?window=all")).text

    assert tile(page, "workers") == (1, "each sent a heartbeat in the last few seconds")
    assert "workers running" in page and "lease" not in page.split('id="kpi-workers"')[1].split("</div>")[1]


async def test_the_summary_json_carries_percentiles_per_stage(stores) -> None:
    store, ops = stores
    call(store, "ping", queue_ms=2.0, run_ms=10.0)
    ops_feed.catch_up(store.redis, store.keys)

    body = (await get(ops, "/ops/api/summary?window=all")).json()

    ping = body["figures"]["tools"][0]
    assert ping["tool"] == "ping" and ping["succeeded"] == 1
    assert set(ping["stages"]) == {"queue", "run", "answer"}
    assert 1.0 < ping["stages"]["queue"]["p50_ms"] <= 2.5
    assert body["events"] == 3


async def test_a_calls_page_lists_its_events_in_order_with_stage_durations(stores) -> None:
    store, ops = stores
    call_id = call(store, "raster_stats", queue_ms=3.0, run_ms=40.0, handler="handler.timeout")
    ops_feed.catch_up(store.redis, store.keys)

    page = await get(ops, f"/ops/calls/{call_id}")

    assert page.status_code == 200
    shown = re.findall(r'<tr class="ev [^"]*" data-type="([^"]+)"', page.text)
    assert shown == ["tool.requested", "tool.started", "tool.succeeded", "handler.started", "handler.failed"]
    assert re.search(r'data-stage="handler">.*?5\.0 ms', page.text, re.S)
    assert re.search(r'data-stage="answer">.*?48\.0 ms', page.text, re.S)


async def test_other_calls_of_the_same_trace_appear_in_a_calls_timeline(stores) -> None:
    store, ops = stores
    parent, child = new_id(), new_id()
    put(store, parent, ToolRequested(call_id=parent, tool="ask", queue="llm", args={}, timeout_s=9), 0, "r", "trace-1")
    put(store, child, ToolRequested(call_id=child, tool="ping", queue="gdal", args={}, timeout_s=9), 5, "r", "trace-1")
    ops_feed.catch_up(store.redis, store.keys)

    page = await get(ops, f"/ops/calls/{parent}")

    assert f'href="/ops/calls/{child}"' in page.text
    assert re.findall(r'data-own="(true|false)"', page.text) == ["true", "false"]


async def test_an_unknown_call_is_a_404_page_that_names_it(stores) -> None:
    _, ops = stores
    page = await get(ops, "/ops/calls/nope")
    assert page.status_code == 404 and "nope" in page.text


async def test_a_workflow_page_shows_its_steps_and_thoughts(stores) -> None:
    store, ops = stores
    agg = "workflow:w1"
    started = WorkflowStarted(
        state_id="w1",
        workflow="chain_of_thought",
        step="think",
        instruction="Think about <b>it</b>",
        ttl_s=60,
        expires_at="2030-01-01T00:00:00Z",
    )
    store.append(make_event(agg, started), "w1:1")
    store.append(
        make_event(agg, WorkflowThoughtSubmitted(state_id="w1", version=2, step="think", text="I did")), "w1:2"
    )

    page = await get(ops, "/ops/workflows/w1")

    assert page.status_code == 200
    assert "chain_of_thought" in page.text and "I did" in page.text
    assert "Think about &lt;b&gt;it&lt;/b&gt;" in page.text  # event text is escaped, never markup


async def test_the_panels_fragment_updates_the_tables_out_of_band(stores) -> None:
    store, ops = stores
    call(store, "ping")
    ops_feed.catch_up(store.redis, store.keys)
    fragment = (await get(ops, "/ops/panels?window=all")).text
    assert '<div id="panels"' in fragment and 'hx-swap-oob="true"' in fragment


async def test_static_files_are_served_and_a_missing_library_says_how_to_install_it(stores) -> None:
    _, ops = stores
    assert (await get(ops, "/ops/static/ops.css")).status_code == 200
    missing = await get(ops, "/ops/static/vendor/nothing.js")
    assert missing.status_code == 404 and "make ops-assets" in missing.text
    assert (await get(ops, "/ops/static/../routes.py")).status_code == 404


async def test_the_live_stream_sends_new_events_as_rows_and_a_change_signal(stores) -> None:
    store, ops = stores
    call(store, "ping")
    cursors = {store.keys.stream(c): "$" for c in ("calls",)}
    cursors = {s: store.redis.xrevrange(s, count=1)[0][0].decode() for s in cursors}
    events: AsyncIterator[str] = ops._events(TailFilter(type="tool.failed"), cursors)

    assert (await anext(events)).startswith("event: changed")
    call(store, "ping")
    call(store, "raster_info", fail="path.not_found")
    frame = await anext(events)

    assert frame.startswith("event: tail\n")
    assert frame.count('data-type="tool.failed"') == 1 and "tool.succeeded" not in frame
    await events.aclose()


async def test_an_ask_calls_page_shows_its_xray(stores) -> None:
    store, ops = stores
    cid = new_id()
    xray = {
        "tools": [{"name": "raster_info", "params": {"uri": "dem.tif"}, "duration_ms": 4.2, "response_preview": "ok"}],
        "timeline": [{"t_ms": 0.5, "event": "model attempt 1 of turn 1: calls"}],
        "total_ms": 42.0,
    }
    put(store, cid, ToolRequested(call_id=cid, tool="ask", queue="llm", args={"question": "?"}, timeout_s=9), 0, "r")
    put(store, cid, ToolSucceeded(call_id=cid, result={"answer": "a", "xray": xray}, duration_ms=40), 42, "o")

    page = await get(ops, f"/ops/calls/{cid}")

    assert "X-ray" in page.text and "model attempt 1 of turn 1: calls" in page.text
    assert re.search(r"raster_info</td>.*?4\.2 ms", page.text, re.S)
