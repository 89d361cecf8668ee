"""A tool call end to end over real HTTP with the SDK client, in both protocol eras (docs/architecture.md)."""

import anyio
import pytest
from mcp import Client, MCPError

from schemas.ids import call_aggregate
from tests.integration.conftest import Stack
from tests.support import wait_for_log

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ERAS = ["auto", "legacy"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("mode", ERAS)
async def test_ping_goes_through_a_worker_and_the_log_in_both_eras(stack: Stack, mode: str) -> None:
    async with Client(stack.url, mode=mode) as client:
        expected_version = "2026-07-28" if mode == "auto" else "2025-11-25"
        assert client.protocol_version == expected_version
        result = await client.call_tool("ping", {})

    assert not result.is_error
    assert result.structured_content["pong"] is True and ":" in result.structured_content["worker"]
    call_id = result.meta["io.geogate/call"]["call_id"]
    events = [e.type for e in stack.store().read_aggregate(call_aggregate(call_id))]
    assert events == ["tool.requested", "tool.started", "tool.succeeded"]


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_carries_input_and_output_schemas_and_honest_hints(stack: Stack, mode: str) -> None:
    async with Client(stack.url, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}

    info = tools["raster_info"]
    assert info.input_schema["required"] == ["uri"] and "width" in info.output_schema["properties"]
    assert info.annotations.read_only_hint is True


@pytest.mark.parametrize("mode", ERAS)
async def test_raster_and_vector_info_read_real_files(stack: Stack, mode: str) -> None:
    async with Client(stack.url, mode=mode) as client:
        raster = await client.call_tool("raster_info", {"uri": "dem.tif"})
        vector = await client.call_tool("vector_info", {"path": "points.gpkg"})

    r, v = raster.structured_content, vector.structured_content
    assert (r["width"], r["height"], r["count"], r["dtype"]) == (64, 32, 1, "float32")
    assert "32633" in r["crs"] and r["bounds"] == [500000.0, 4099040.0, 501920.0, 4100000.0]
    assert (v["feature_count"], v["layer"], v["geometry_type"]) == (5, "points", "Point")
    assert vector.meta["io.geogate/call"]["aliases_used"] == {"path": "uri"}


@pytest.mark.parametrize("mode", ERAS)
async def test_invalid_arguments_get_a_tool_error_naming_each_field_and_publish_nothing(
    stack: Stack, mode: str
) -> None:
    store = stack.store()
    before = store.redis.xlen(store.keys.stream("calls"))
    async with Client(stack.url, mode=mode) as client:
        result = await client.call_tool("ping", {"queue": "nope", "colour": "red"})

    assert result.is_error
    fields = {e["field"] for e in result.structured_content["error"]["errors"]}
    assert fields == {"queue", "colour"} and "Traceback" not in result.content[0].text
    assert store.redis.xlen(store.keys.stream("calls")) == before


@pytest.mark.parametrize("mode", ERAS)
async def test_a_path_outside_the_workspace_is_a_tool_error_with_code_and_field(stack: Stack, mode: str) -> None:
    async with Client(stack.url, mode=mode) as client:
        result = await client.call_tool("raster_info", {"uri": "/etc/passwd"})

    error = result.structured_content["error"]
    assert result.is_error and (error["code"], error["field"]) == ("path.outside_workspace", "uri")


@pytest.mark.parametrize("mode", ERAS)
async def test_worker_progress_reaches_the_client_as_progress_notifications(stack: Stack, mode: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(stack.url, mode=mode) as client:
        result = await client.call_tool("ping", {"delay_ms": 700}, progress_callback=on_progress)

    assert not result.is_error and len(seen) >= 2 and seen == sorted(seen)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_that_gives_up_cancels_the_call_and_the_worker_stops(stack: Stack, mode: str) -> None:
    store = stack.store()
    async with Client(stack.url, mode=mode) as client:
        with pytest.raises(MCPError):
            await client.call_tool("ping", {"delay_ms": 20_000}, read_timeout_seconds=1.0)

    def cancelled_call() -> str | None:
        for stored in reversed(store.read("calls", count=None)[-200:]):
            if stored.event.type == "tool.cancel_requested":
                return stored.event.data.call_id
        return None

    wait_for_log(store, lambda: cancelled_call() is not None, what="tool.cancel_requested in the log")
    call_id = cancelled_call()
    wait_for_log(store, lambda: store.call_state(call_id).terminal, what="the cancelled call to end")
    assert store.call_state(call_id).error_code == "cancelled"


async def test_many_concurrent_calls_each_get_their_own_outcome(stack: Stack) -> None:
    results = {}

    async def one(n: int, client: Client) -> None:
        results[n] = await client.call_tool("ping", {"queue": ["gdal", "sandbox", "llm", "workflow"][n % 4]})

    async with Client(stack.url) as client, anyio.create_task_group() as group:
        for n in range(40):
            group.start_soon(one, n, client)

    assert len(results) == 40 and not any(r.is_error for r in results.values())
    assert {r.structured_content["queue"] for r in results.values()} == {"gdal", "sandbox", "llm", "workflow"}
    assert len({r.meta["io.geogate/call"]["call_id"] for r in results.values()}) == 40
