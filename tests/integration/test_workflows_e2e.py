"""Guided workflows over real HTTP with the SDK client (issue 6 acceptance): full runs, races, the transcript."""

import json

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult

from geogate.eventlog.replay import replay
from tests.integration.conftest import Stack
from tests.support import justify

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def follow(client: Client, answer: CallToolResult, thought: str) -> CallToolResult:
    """Make exactly the call `next_action` names, as a model would."""
    action = answer.structured_content["next_action"]
    args = {**action["with"], "thought": thought}
    result = await client.call_tool(action["tool"], args)
    assert not result.is_error, result.content
    return result


async def test_chain_of_thought_runs_step_by_step_with_templates_from_earlier_thoughts(stack: Stack) -> None:
    async with Client(stack.url) as client:
        start = await client.call_tool("startChainOfThought", {"problem": "Pick a CRS for Alpine slope maps"})
        assert start.structured_content["step"] == "decompose" and "Alpine slope maps" in start.content[0].text
        first = await follow(client, start, "1. Distortion of distances\n2. Datum of the DEM")
        assert "Focus on the first sub-task: Distortion of distances" in first.structured_content["instruction"]
        second = await follow(client, first, "Use a conformal projection such as UTM 32N")
        assert "Use a conformal projection such as UTM 32N" in second.structured_content["instruction"]
        third = await follow(client, second, "ETRS89 is the datum of record")
        done = await follow(client, third, "UTM 32N on ETRS89 (EPSG:25832)")
        transcript = await client.read_resource(f"workflow://{done.structured_content['state_id']}")

    assert done.structured_content["status"] == "completed" and done.structured_content["next_action"] is None
    assert "EPSG:25832" in done.structured_content["instruction"]
    text = transcript.contents[0].text
    assert "Distortion of distances" in text and "ETRS89 is the datum of record" in text


async def test_plan_reprojection_guides_real_gdal_calls_through_geogate(stack: Stack) -> None:
    async with Client(stack.url, sampling_callback=justify) as client:  # the reprojection is gated
        start = await client.call_tool(
            "start_workflow", {"workflow": "plan_reprojection", "inputs": {"uri": "dem.tif", "goal": "a web map"}}
        )
        calls = start.structured_content["call_first"]
        info = await client.call_tool(calls[0]["tool"], calls[0]["with"])
        crs = await follow(client, start, info.content[0].text)
        plan = {"dst_crs": "EPSG:4326", "property": "geographic", "why": "web clients expect lon/lat"}
        resampling = await follow(client, crs, json.dumps(plan))
        choice = {"method": "bilinear", "why": "continuous surface", "output": "dem_wgs84.tif"}
        verify = await follow(client, resampling, json.dumps(choice))
        outputs = [await client.call_tool(c["tool"], c["with"]) for c in verify.structured_content["call_first"]]
        done = await follow(client, verify, '{"verdict": "ok", "notes": "bounds and means agree"}')

    assert not any(o.is_error for o in outputs), [o.content for o in outputs if o.is_error]
    assert (stack.workspace / "dem_wgs84.tif").exists()
    assert done.structured_content["status"] == "completed"
    assert "reprojected to EPSG:4326 as dem_wgs84.tif" in done.structured_content["instruction"]


async def test_two_concurrent_replies_to_one_step_advance_it_exactly_once(stack: Stack) -> None:
    async with Client(stack.url) as client:
        start = await client.call_tool("startChainOfThought", {"problem": "race"})
        action = start.structured_content["next_action"]
        results: list[CallToolResult] = []

        async def reply(text: str) -> None:
            results.append(await client.call_tool(action["tool"], {**action["with"], "thought": text}))

        async with anyio.create_task_group() as group:
            group.start_soon(reply, "1. a\n2. b")
            group.start_soon(reply, "1. c\n2. d")
        state = await client.call_tool("get_workflow_state", {"state_id": start.structured_content["state_id"]})

    winners = [r for r in results if not r.is_error]
    losers = [r for r in results if r.is_error]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0].structured_content["error"]["code"] == "workflow.version_conflict"
    assert state.structured_content["step"] == "analyze_first"


def test_replay_rebuilds_every_workflow_state_exactly(stack: Stack) -> None:
    report = replay(stack.store(), swap=False)
    assert report.identical, (report.different[:5], report.missing_live[:5], report.extra_live[:5])
