"""Result handlers on the real call path over HTTP with the SDK client (issue 5, seed 003 Generative Invocation)."""

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rasterio
from mcp import Client
from mcp.types import CallToolResult, ResourceLink
from rasterio.transform import from_origin

from schemas.ids import call_aggregate
from schemas.tools import TOOLS
from tests.integration.conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

THREE_FIELDS = "[{'band': b['band'], 'mean': b['mean'], 'std': b['std']} for b in tool_output['band_stats']]"
STATS_50 = {"uri": "bands50.tif", "include_histogram": True, "histogram_bins": 32}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def bands50(stack: Stack) -> Path:
    """A 50-band raster: raster_stats on it is a large output, like the seed's `git diff`."""
    path = stack.workspace / "bands50.tif"
    data = np.random.default_rng(5).normal(100, 15, size=(50, 32, 32)).astype("float32")
    profile = {"driver": "GTiff", "width": 32, "height": 32, "count": 50, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(path, "w", transform=from_origin(500000, 4100000, 30, 30), **profile) as dst:
        dst.write(data)
    return path


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _handler_meta(result: CallToolResult) -> dict[str, Any]:
    return result.meta["io.geogate/result_handler"]


async def _stats(client: Client, script: str | list[str], language: str = "python") -> CallToolResult:
    handler = {"language": language, "script": script}
    return await client.call_tool("raster_stats", {**STATS_50, "result_handler": handler})


async def test_a_python_handler_keeps_three_fields_of_50_bands_and_cuts_the_bytes(stack: Stack, bands50: Path) -> None:
    """Seed 003's example on a GDAL tool: only the handler's value comes back, the raw size is in `_meta`."""
    async with Client(stack.url) as client:
        result = await _stats(client, THREE_FIELDS)

    assert not result.is_error, result.content
    value = result.structured_content["result"]
    assert len(value) == 50 and all(set(band) == {"band", "mean", "std"} for band in value)
    meta = _handler_meta(result)
    raw_size, value_size = meta["raw"]["size"], len(_compact(value))
    print(f"raster_stats, 50 bands: raw {raw_size} B -> handler value {value_size} B ({raw_size / value_size:.0f}x)")
    assert value_size * 10 < raw_size and meta["value_bytes"] == value_size
    assert meta["language"] == "python" and meta["isolation"] == "bwrap" and meta["duration_ms"] > 0
    call_id = result.meta["io.geogate/call"]["call_id"]
    events = [e for e in stack.store().read_aggregate(call_aggregate(call_id)) if e.type != "tool.progress"]
    types = [e.type for e in events]
    assert types == ["tool.requested", "tool.started", "tool.succeeded", "handler.started", "handler.succeeded"]
    # in place: the worker that ran the tool ran the handler, under the lease the outcome named
    tool, succeeded, handler = (events[i].data for i in (1, 2, 3))
    assert handler.worker == tool.worker and handler.lease == succeeded.handler_lease == tool.lease != ""


async def test_a_jmespath_handler_under_meta_picks_fields_in_process(stack: Stack, bands50: Path) -> None:
    handler = {"language": "jmespath", "script": "band_stats[?band <= `3`].{band: band, max: max}"}
    async with Client(stack.url) as client:
        result = await client.call_tool("raster_stats", STATS_50, meta={"io.geogate/result_handler": handler})

    assert not result.is_error, result.content
    assert [b["band"] for b in result.structured_content["result"]] == [1, 2, 3]
    assert _handler_meta(result)["isolation"] == "in-process"


async def test_a_failing_handler_is_a_tool_error_linking_the_raw_output_that_stays_readable(
    stack: Stack, bands50: Path
) -> None:
    """Issue 5 point 6: the tool succeeded, the handler failed; retry the handler on the raw output, not the tool."""
    async with Client(stack.url) as client:
        failed = await _stats(client, ["bands = tool_output['band_stats']", "[b['band'] for b in bands"])
        links = [c for c in failed.content if isinstance(c, ResourceLink)]
        raw = await client.read_resource(str(links[0].uri))

    error = failed.structured_content["error"]
    assert failed.is_error and error["code"] == "handler.syntax_error" and error["line"] == 2
    assert error["tool_succeeded"] is True and error["raw"]["uri"] == str(links[0].uri)
    body = raw.contents[0].text.encode()
    assert hashlib.sha256(body).hexdigest() == error["raw"]["sha256"] and len(body) == error["raw"]["size"]
    assert len(json.loads(body)["band_stats"]) == 50


async def test_invalid_handler_fields_are_named_and_nothing_is_published(stack: Stack) -> None:
    store = stack.store()
    before = store.redis.xlen(store.keys.stream("calls"))
    async with Client(stack.url) as client:
        result = await client.call_tool("ping", {"colour": 1, "result_handler": {"language": "lua", "script": ""}})

    fields = {e["field"] for e in result.structured_content["error"]["errors"]}
    assert result.is_error and fields == {"colour", "result_handler.language", "result_handler.script"}
    assert store.redis.xlen(store.keys.stream("calls")) == before


@pytest.mark.parametrize(
    ("script", "codes"),
    [
        ("while True:\n    pass", {"handler.timeout"}),
        ("open('/etc/passwd').read()", {"handler.forbidden", "handler.exception"}),
        ("import os\nos.listdir('/')", {"handler.forbidden"}),
        ("import socket\nsocket.create_connection(('127.0.0.1', 6379))", {"handler.forbidden", "handler.exception"}),
        ("x = bytearray(4 * 1024 ** 3)", {"handler.memory_limit"}),
    ],
    ids=["infinite-loop", "etc-passwd", "list-root", "socket", "memory-bomb"],
)
async def test_a_hostile_handler_is_contained_and_the_next_call_is_served(
    stack: Stack, script: str, codes: set[str]
) -> None:
    async with Client(stack.url) as client:
        hostile = await client.call_tool("ping", {"result_handler": {"script": script}})
        trivial = {"result_handler": {"script": "tool_output['pong']"}}
        after = [await client.call_tool("ping", trivial) for _ in range(3)]

    assert hostile.is_error and hostile.structured_content["error"]["code"] in codes, hostile.content
    assert "root:" not in json.dumps(hostile.structured_content)
    assert all(not r.is_error and r.structured_content == {"result": True} for r in after)


async def test_a_handler_chains_a_read_only_tool_through_the_log(stack: Stack) -> None:
    script = "info = tools.raster_info(uri='dem.tif')\n{'pong': tool_output['pong'], 'width': info['width']}"
    async with Client(stack.url) as client:
        result = await client.call_tool("ping", {"result_handler": {"script": script}})

    assert not result.is_error, result.content
    assert result.structured_content["result"] == {"pong": True, "width": 64}
    assert _handler_meta(result)["tool_calls"] == 1
    own = stack.store().read_aggregate(call_aggregate(result.meta["io.geogate/call"]["call_id"]))
    assert [e.data.handler_lease for e in own if e.type == "tool.succeeded"] == [""]  # on the sandbox queue
    chained = [s.event for s in stack.store().read("calls") if s.event.causation_id is not None]
    assert any(e.type == "tool.requested" and e.data.tool == "raster_info" for e in chained)


@pytest.mark.parametrize("tool", ["raster_convert", "raster_stats"], ids=["write-tool", "own-tool"])
async def test_a_handler_cannot_call_a_write_tool_or_its_own_tool(stack: Stack, bands50: Path, tool: str) -> None:
    store = stack.store()
    start = store.redis.xinfo_stream(store.keys.stream("calls"))["last-generated-id"].decode()
    script = f"tools.{tool}(uri='dem.tif', output='copy.tif')"
    async with Client(stack.url) as client:
        result = await _stats(client, script)

    error = result.structured_content["error"]
    assert result.is_error and error["code"] == "handler.exception" and "callable" in error["message"]
    requested = [s.event.data.tool for s in store.read("calls", start=start) if s.event.type == "tool.requested"]
    assert requested == ["raster_stats"]


async def test_tools_list_documents_the_handler_on_every_tool(stack: Stack) -> None:
    async with Client(stack.url) as client:
        tools = [t for t in (await client.list_tools()).tools if t.name in TOOLS]
        instructions = client.instructions or ""

    assert len(tools) == len(TOOLS) and all("result_handler" in t.input_schema["properties"] for t in tools)
    assert "result_handler" in instructions and "calls://{call_id}/raw" in instructions  # said once, for every tool
    assert all("result" in t.output_schema["properties"] for t in tools if t.output_schema)
