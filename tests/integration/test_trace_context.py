"""OpenTelemetry: a W3C `traceparent` in a request's `_meta` becomes the trace id of the call's events."""

import pytest
from mcp import Client

from schemas.ids import call_aggregate
from tests.integration.conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_traceparent_in_meta_is_the_trace_id_of_every_event_of_the_call(stack: Stack, mode: str) -> None:
    meta = {"traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"}
    async with Client(stack.url, mode=mode) as client:
        result = await client.call_tool("ping", {"queue": "gdal"}, meta=meta)
    call_id = (result.meta or {})["io.geogate/call"]["call_id"]

    events = stack.store().read_aggregate(call_aggregate(call_id))

    assert [e.type for e in events] == ["tool.requested", "tool.started", "tool.succeeded"]
    assert {e.trace_id for e in events} == {TRACE}


async def test_without_a_traceparent_each_call_gets_a_trace_of_its_own(stack: Stack) -> None:
    async with Client(stack.url) as client:
        first = await client.call_tool("ping", {"queue": "gdal"})
        second = await client.call_tool("ping", {"queue": "gdal"})
    traces = [
        stack.store().read_aggregate(call_aggregate((r.meta or {})["io.geogate/call"]["call_id"]))[0].trace_id
        for r in (first, second)
    ]
    assert traces[0] != traces[1] and TRACE not in traces
