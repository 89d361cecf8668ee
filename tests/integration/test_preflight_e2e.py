"""Preflight over real HTTP (issue 4): 3 requests without sampling, 1 with, in both eras."""

import json
import subprocess
import sys

import pytest
from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from tests.integration.conftest import Stack, start_gateway, stop
from tests.llm_server import text
from tests.support import free_port

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

GOOD = {
    "intent": "a web map in lon/lat",
    "alternatives": [{"method": "EPSG:3857", "why_not": "the client wants degrees"}],
    "choice": {"method": "the requested one", "rationale": "matches the consumer", "tradeoffs": "area distortion"},
    "confidence": "medium",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CountingClient(Client):
    """The SDK client, counting the requests it sends (MRTR retries included in `call_tool`)."""

    requests = 0

    async def call_tool(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        type(self).requests += 1
        return await super().call_tool(*args, **kwargs)


def reproject_args(output: str, crs: str, resampling: str = "bilinear") -> dict[str, object]:
    return {"uri": "dem.tif", "output": output, "dst_crs": crs, "resampling": resampling, "overwrite": True}


async def test_a_gated_reproject_succeeds_after_exactly_three_requests_then_a_cache_hit_adds_none(stack: Stack) -> None:
    CountingClient.requests = 0
    async with CountingClient(stack.url) as client:
        hint = await client.call_tool("raster_reproject", reproject_args("r3.tif", "EPSG:31468", "q3"))
        required = hint.structured_content["preflight"]["required"]
        items = [{"hash": r["hash"], "domain": r["domain"], "justification": GOOD} for r in required]
        saved = await client.call_tool("persist_justifications", {"items": items})
        done = await client.call_tool("raster_reproject", reproject_args("r3.tif", "EPSG:31468", "q3"))
        assert CountingClient.requests == 3
        again = await client.call_tool("raster_reproject", reproject_args("r3b.tif", "epsg:31468", "Q3"))

    assert hint.is_error and {r["domain"] for r in required} == {"crs_datum", "resampling"}
    assert all(r["messages"][0]["content"]["text"] for r in required)
    assert not saved.is_error and not done.is_error and not again.is_error, (done.content, again.content)
    assert CountingClient.requests == 4


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_can_sample_gets_the_call_done_in_one_request(stack: Stack, mode: str) -> None:
    prompts: list[str] = []

    async def sample(context, params) -> CreateMessageResult:  # type: ignore[no-untyped-def]
        prompts.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=json.dumps(GOOD)),
            model="scripted",
            stop_reason="endTurn",
        )

    crs, resampling = ("EPSG:32632", "rms") if mode == "auto" else ("EPSG:32634", "med")
    async with Client(stack.url, mode=mode, sampling_callback=sample) as client:
        result = await client.call_tool("raster_reproject", reproject_args(f"s-{mode}.tif", crs, resampling))

    assert not result.is_error, result.content
    assert len(prompts) == 2 and any(crs in p for p in prompts) and any(resampling in p for p in prompts)


async def test_a_malformed_sample_is_retried_once_with_its_errors_then_falls_back_to_the_hint(stack: Stack) -> None:
    prompts: list[str] = []

    async def sample(context, params) -> CreateMessageResult:  # type: ignore[no-untyped-def]
        prompts.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text='{"intent": "x"}'),
            model="scripted",
            stop_reason="endTurn",
        )

    async with Client(stack.url, sampling_callback=sample) as client:
        result = await client.call_tool(
            "vector_reproject", {"uri": "points.gpkg", "output": "p.gpkg", "dst_crs": "EPSG:2056", "overwrite": True}
        )

    assert result.is_error and result.structured_content["preflight"]["required"][0]["domain"] == "crs_datum"
    assert len(prompts) == 2 and "rejected" in prompts[1]


async def test_forged_wrong_and_malformed_persists_are_refused_field_by_field(stack: Stack) -> None:
    async with Client(stack.url) as client:
        hint = await client.call_tool(
            "vector_reproject", {"uri": "points.gpkg", "output": "p2.gpkg", "dst_crs": "EPSG:2154"}
        )
        digest = hint.structured_content["preflight"]["required"][0]["hash"]
        forged = await client.call_tool(
            "persist_justification", {"hash": "1" * 64, "domain": "crs_datum", "justification": GOOD}
        )
        wrong = await client.call_tool(
            "persist_justification", {"hash": digest, "domain": "resampling", "justification": GOOD}
        )
        bad = await client.call_tool(
            "persist_justification",
            {"hash": digest, "domain": "crs_datum", "justification": {**GOOD, "confidence": "total"}},
        )
        huge = await client.call_tool(
            "persist_justification",
            {"hash": digest, "domain": "crs_datum", "justification": {**GOOD, "intent": "x" * 40_000}},
        )
        still = await client.call_tool(
            "vector_reproject", {"uri": "points.gpkg", "output": "p2.gpkg", "dst_crs": "EPSG:2154"}
        )

    def fields(result) -> set[str]:  # type: ignore[no-untyped-def]
        return {e["field"] for e in result.structured_content["error"]["errors"]}

    assert fields(forged) == {"hash"} and fields(wrong) == {"domain"}
    assert fields(bad) == {"justification.confidence"} and fields(huge) == {"justification"}
    assert still.is_error and "preflight" in still.structured_content


async def test_a_revoked_justification_gates_again_and_export_writes_gdal_mcp_files(stack: Stack, tmp_path) -> None:
    async with Client(stack.url) as client:
        hint = await client.call_tool(
            "vector_reproject", {"uri": "points.gpkg", "output": "p3.gpkg", "dst_crs": "EPSG:25833", "overwrite": True}
        )
        item = hint.structured_content["preflight"]["required"][0]
        await client.call_tool(
            "persist_justification", {"hash": item["hash"], "domain": "crs_datum", "justification": GOOD}
        )
        ok = await client.call_tool(
            "vector_reproject", {"uri": "points.gpkg", "output": "p3.gpkg", "dst_crs": "EPSG:25833", "overwrite": True}
        )
        shown = json.loads((await client.read_resource(f"justification://{item['hash']}")).contents[0].text)
        cli = [sys.executable, "-m", "geogate.cli", "justifications"]
        exported = subprocess.run([*cli, "export", str(tmp_path)], env=stack.env, capture_output=True, text=True)
        revoked = subprocess.run([*cli, "revoke", item["hash"]], env=stack.env, capture_output=True, text=True)
        gated = await client.call_tool(
            "vector_reproject", {"uri": "points.gpkg", "output": "p3.gpkg", "dst_crs": "EPSG:25833", "overwrite": True}
        )

    assert not ok.is_error and ok.meta["io.geogate/call"]["call_id"] in shown["used_by_calls"]
    assert shown["actor"] == "anonymous" and shown["status"] == "persisted"
    assert exported.returncode == 0 and (tmp_path / "crs_datum" / f"sha256:{item['hash']}.json").exists()
    assert revoked.returncode == 0 and gated.is_error and "preflight" in gated.structured_content


async def test_the_server_side_model_justifies_for_a_client_that_cannot_sample(stack: Stack, llm_server) -> None:
    port = free_port()
    gateway = start_gateway({**stack.env, "GEOGATE_PORT": str(port), "GEOGATE_PREFLIGHT_SERVER_LLM": "1"}, port)
    llm_server.script.load([text("I would pick EPSG:3067."), text(json.dumps(GOOD))])
    args = {"uri": "points.gpkg", "output": "p-server.gpkg", "dst_crs": "EPSG:3067", "overwrite": True}
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            result = await client.call_tool("vector_reproject", args)
            call_id = result.meta["io.geogate/call"]["call_id"]
            store = stack.store()
            requested = store.read_aggregate(f"call:{call_id}")[0].data
            shown = json.loads(
                (await client.read_resource(f"justification://{requested.justified_by[0]}")).contents[0].text
            )
    finally:
        stop(gateway)

    assert not result.is_error, result.content
    assert shown["source"] == "server_llm" and shown["status"] == "persisted"
    prompts = [r["messages"][-1]["content"] for r in llm_server.script.requests]
    assert len(prompts) == 2 and "EPSG:3067" in prompts[0] and "rejected" in prompts[1]
