"""The chat routes' pure parts: statuses by error code, the trace tail, SSE frames and the final items."""

import json
from datetime import timedelta

from mcp.types import CallToolResult, TextContent

from gateway.chat import TraceTail, final_items, result_response, sse
from schemas.events import ToolFailed, ToolRequested, ToolSucceeded
from schemas.events.llm import LLMAttempted
from tests.support import make_event


def error(code: str) -> CallToolResult:
    body = {"error": {"code": code, "message": "m"}}
    return CallToolResult(content=[TextContent(type="text", text="m")], structured_content=body, is_error=True)


def test_a_failed_ask_maps_to_a_status_that_fits_its_code_and_never_carries_a_trace() -> None:
    statuses = [result_response(error(c)).status_code for c in ("llm.rate_limited", "call.timeout", "job.crashed")]
    ok = CallToolResult(content=[], structured_content={"answer": "a"}, _meta={"io.geogate/call": {"call_id": "c1"}})

    assert statuses == [429, 504, 500]
    assert json.loads(result_response(ok).body) == {"answer": "a", "call_id": "c1"}
    assert final_items(error("llm.provider_error")) == [
        ("error", {"error": {"code": "llm.provider_error", "message": "m"}})
    ]


def test_the_tail_follows_one_trace_and_turns_its_events_into_items() -> None:
    tail = TraceTail("mine")
    requested = make_event(
        "call:c",
        ToolRequested(call_id="c", tool="raster_info", queue="gdal", args={"uri": "a"}, timeout_s=9),
        trace_id="mine",
    )
    done = make_event("call:c", ToolSucceeded(call_id="c", result={"x": 1}), trace_id="mine")
    done = done.model_copy(update={"ts": requested.ts + timedelta(milliseconds=12)})
    attempt = LLMAttempted(
        conversation_id="k",
        turn=1,
        attempt=2,
        model="m",
        provider="openai",
        temperature=0.6,
        outcome="invalid",
        error_kind="truncated",
    )

    assert tail.items(make_event("call:z", ToolFailed(call_id="z", code="x", message="y"), trace_id="other")) == []
    assert [i.message for i in tail.items(requested)] == ["calling raster_info"]  # type: ignore[union-attr]
    (item,) = tail.items(done)
    assert (item.tool.name, item.tool.duration_ms, item.tool.response_preview) == ("raster_info", 12.0, '{"x":1}')  # type: ignore[union-attr]
    (progress,) = tail.items(make_event("conversation:k", attempt, trace_id="mine"))
    assert progress.message == "model attempt 2 of turn 1 (temperature 0.6): invalid (truncated)"  # type: ignore[union-attr]
    assert sse(progress.kind, progress).startswith('event: progress\ndata: {"kind":"progress"')
