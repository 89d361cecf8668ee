"""The LLM host end to end: `ask` over real HTTP, a Celery worker, the event log and a scripted model server."""

import json
import os
import subprocess
import sys
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.types import CallToolResult

from schemas.events import Event, ToolRequested
from schemas.events.llm import LLMAttempted, conversation_aggregate
from schemas.tools import SPECS
from schemas.validation import validate
from tests.integration.conftest import LLM_ENV, Stack
from tests.llm_server import ScriptedServer, native, text
from workers.llm.xray_events import load_conversation, xray_from_events

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CALL = '{"tool": "raster_info", "params": {"uri": "dem.tif"}}'
BROKEN = 'Calling: {"tool": raster_info, params: {uri: dem.tif}'
ANSWER = "dem.tif is a 64×32 float32 raster in EPSG:32633."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def ask(stack: Stack, server: ScriptedServer, script: list[dict[str, Any]], **args: Any) -> CallToolResult:
    """Load `script` into the model server and call `ask` over MCP."""
    server.script.load(script)
    with anyio.fail_after(60):
        async with Client(stack.url) as client:
            return await client.call_tool("ask", {"question": "What is in dem.tif?", **args})


def conversation(stack: Stack, result: CallToolResult) -> tuple[list[Event], list[Event]]:
    """The conversation's events and the `tool.requested` events its attempts caused, from the log."""
    store = stack.store()
    events = store.read_aggregate(conversation_aggregate(result.structured_content["conversation_id"]))
    attempts = {e.id for e in events if isinstance(e.data, LLMAttempted)}
    requested = [s.event for s in store.read("calls") if s.event.causation_id in attempts]
    return events, requested


def attempts_of(events: list[Event]) -> list[tuple[int, int, str, str | None]]:
    return [(e.data.turn, e.data.attempt, e.data.outcome, e.data.error_kind) for e in events if e.type == "llm.attempt"]


def assert_only_valid_calls_reached_workers(requested: list[Event]) -> None:
    """Every call the model made was published validated (args fit the spec), and never `ask` itself."""
    for event in requested:
        data = event.data
        assert isinstance(data, ToolRequested) and data.tool != "ask"
        assert validate(SPECS[data.tool], data.args).args == data.args


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


async def test_clean_native_calls_run_through_workers_and_the_xray_is_rebuilt_from_events(
    stack: Stack, llm_server: ScriptedServer
) -> None:
    script = [native(("raster_info", {"uri": "dem.tif"}), ("vector_info", {"uri": "points.gpkg"})), text(ANSWER)]
    result = await ask(stack, llm_server, script, model="gpt-4o-mini")

    body = result.structured_content
    assert not result.is_error and (body["outcome"], body["answer"]) == ("answered", ANSWER)
    offered = tool_names(llm_server.script.requests[0])
    assert "raster_info" in offered and "ask" not in offered and "vector_simplify" not in offered
    assert llm_server.script.temperatures == [0.7, 0.7]
    events, requested = conversation(stack, result)
    assert [e.type for e in events] == [
        "llm.conversation_started",
        "llm.attempt",
        "llm.attempt",
        "llm.conversation_finished",
    ]
    assert sorted(e.data.tool for e in requested) == ["raster_info", "vector_info"]
    assert {e.trace_id for e in [*events, *requested]} == {events[0].trace_id}
    xray = body["xray"]
    assert sorted(t["name"] for t in xray["tools"]) == ["raster_info", "vector_info"]
    assert all(t["duration_ms"] > 0 and t["response_preview"] and not t["is_error"] for t in xray["tools"])
    sources = {c["source"] for c in xray["citations"]}
    assert any(s.endswith("dem.tif") for s in sources) and any(s.endswith("points.gpkg") for s in sources)
    call_ids = [e.data.call_id for e in requested]
    rebuilt = xray_from_events(load_conversation(stack.store(), body["conversation_id"], call_ids))
    assert rebuilt.model_dump(mode="json") == xray
    assert_only_valid_calls_reached_workers(requested)


async def test_prompt_based_call_buried_in_prose_is_extracted_and_run(stack: Stack, llm_server: ScriptedServer) -> None:
    script = [text(f"Let me look first.\n```json\n{CALL}\n```\nThen I will answer."), text(ANSWER)]
    result = await ask(stack, llm_server, script)

    first = llm_server.script.requests[0]
    assert "tools" not in first and "raster_info" in first["messages"][0]["content"]
    assert result.structured_content["answer"] == ANSWER
    events, requested = conversation(stack, result)
    assert [(e.data.tool, e.data.args["uri"]) for e in requested] == [("raster_info", "dem.tif")]
    assert events[0].data.mode == "prompt"


async def test_malformed_json_is_retried_at_a_lower_temperature_then_recovers(
    stack: Stack, llm_server: ScriptedServer
) -> None:
    script = [text(BROKEN), text(CALL), text(ANSWER)]
    result = await ask(stack, llm_server, script)

    assert llm_server.script.temperatures == [0.7, 0.6, 0.7]
    assert "truncated" in llm_server.script.requests[1]["messages"][-1]["content"]
    events, requested = conversation(stack, result)
    assert attempts_of(events) == [(1, 1, "invalid", "truncated"), (1, 2, "calls", None), (2, 1, "answer", None)]
    assert [e.data.tool for e in requested] == ["raster_info"]
    assert result.structured_content["attempts"] == 3


async def test_wrong_tool_name_gets_did_you_mean_and_never_reaches_a_worker(
    stack: Stack, llm_server: ScriptedServer
) -> None:
    script = [text('{"tool": "raster-info", "params": {"uri": "dem.tif"}}'), text(CALL), text(ANSWER)]
    result = await ask(stack, llm_server, script)

    assert "did you mean 'raster_info'" in llm_server.script.requests[1]["messages"][-1]["content"]
    events, requested = conversation(stack, result)
    assert attempts_of(events)[0][2:] == ("invalid", "unknown_tool")
    assert [e.data.tool for e in requested] == ["raster_info"]
    assert_only_valid_calls_reached_workers(requested)


async def test_wrong_parameters_are_retried_and_aliases_are_accepted(stack: Stack, llm_server: ScriptedServer) -> None:
    script = [
        text('{"tool": "raster_info", "params": {"uri": "dem.tif", "colour": "red"}}'),
        text('{"tool": "raster_info", "params": {"path": "dem.tif", "band": 1}}'),
        text(ANSWER),
    ]
    result = await ask(stack, llm_server, script)

    events, requested = conversation(stack, result)
    assert attempts_of(events)[:2] == [(1, 1, "invalid", "unknown_param"), (1, 2, "calls", None)]
    assert [e.data.args for e in requested] == [{"uri": "dem.tif", "band": 1}]
    assert_only_valid_calls_reached_workers(requested)


async def test_a_model_that_never_recovers_gives_up_and_calls_nothing(stack: Stack, llm_server: ScriptedServer) -> None:
    script = [text('{"tool": "raster_info", "params": {"uri": 7}}')] * 3
    result = await ask(stack, llm_server, script)

    body = result.structured_content
    assert not result.is_error and (body["outcome"], body["answer"], body["attempts"]) == ("gave_up", "", 3)
    assert body["errors"][0]["kind"] == "wrong_type" and "uri" in body["errors"][0]["field"]
    assert llm_server.script.temperatures == [0.7, 0.6, 0.5]
    events, requested = conversation(stack, result)
    assert [a[2] for a in attempts_of(events)] == ["invalid"] * 3 and requested == []
    assert events[-1].data.outcome == "gave_up" and body["xray"]["tools"] == []


async def test_call_budget_blocked_tools_and_token_limit_are_enforced(stack: Stack, llm_server: ScriptedServer) -> None:
    two = native(("raster_info", {"uri": "dem.tif"}), ("vector_info", {"uri": "points.gpkg"}))
    blocked = native(("vector_simplify", {"uri": "points.gpkg", "tolerance": 1.0}))
    one = native(("raster_info", {"uri": "dem.tif"}))
    result = await ask(stack, llm_server, [two, blocked, one, text(ANSWER)], model="gpt-4o-mini", max_tool_calls=1)

    events, requested = conversation(stack, result)
    kinds = [a[3] for a in attempts_of(events)]
    assert kinds == ["too_many_calls", "blocked_tool", None, None]
    assert [e.data.tool for e in requested] == ["raster_info"]

    big = text(CALL, prompt_tokens=300)
    limited = await ask(stack, llm_server, [big, text(ANSWER)], max_total_tokens=256)
    assert limited.structured_content["outcome"] == "limit" and len(llm_server.script.requests) == 1


async def test_the_rate_limit_per_client_is_enforced_in_redis(stack: Stack, llm_server: ScriptedServer) -> None:
    store, limit = stack.store(), int(LLM_ENV["GEOGATE_LLM_RATE_LIMIT_PER_MINUTE"])
    key = store.keys.rate("llm", "anonymous", 60)
    store.redis.set(key, limit - 1, ex=60)
    try:
        allowed = await ask(stack, llm_server, [text(ANSWER)])
        refused = await ask(stack, llm_server, [text(ANSWER)])
    finally:
        store.redis.delete(key)

    assert not allowed.is_error and refused.is_error
    assert refused.structured_content["error"]["code"] == "llm.rate_limited"
    assert len(llm_server.script.requests) == 0  # the refused request never reached the model


async def test_api_chat_answers_over_http_and_rejects_bad_input_with_field_errors(
    stack: Stack, llm_server: ScriptedServer
) -> None:
    base = stack.url.removesuffix("/mcp")
    llm_server.script.load([text(CALL), text(ANSWER)])
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        ok = await http.post("/api/chat", json={"message": "What is in dem.tif?"})
        invalid = await http.post("/api/chat", json={"question": "", "max_turns": 0, "colour": "red"})
        not_json = await http.post("/api/chat", content=b"{nope", headers={"content-type": "application/json"})

    assert ok.status_code == 200 and ok.json()["answer"] == ANSWER and ok.json()["call_id"]
    assert [t["name"] for t in ok.json()["xray"]["tools"]] == ["raster_info"]
    assert invalid.status_code == 422
    assert {e["field"] for e in invalid.json()["error"]["errors"]} == {"question", "max_turns", "colour"}
    assert not_json.status_code == 400 and "Traceback" not in not_json.text + invalid.text


async def test_api_chat_stream_relays_progress_each_tool_call_the_xray_and_the_answer(
    stack: Stack, llm_server: ScriptedServer
) -> None:
    base = stack.url.removesuffix("/mcp")
    llm_server.script.load([text(BROKEN), text(CALL), text(ANSWER)])
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        response = await http.post("/api/chat/stream", json={"question": "What is in dem.tif?"})

    assert response.headers["content-type"].startswith("text/event-stream")
    frames = parse_sse(response.text)
    kinds = [kind for kind, _ in frames]
    assert kinds[-2:] == ["xray", "answer"] and kinds.count("tool_call") == 1
    assert kinds.index("progress") < kinds.index("tool_call")
    messages = [data["message"] for kind, data in frames if kind == "progress"]
    assert any("model attempt 1 of turn 1" in m and "invalid" in m for m in messages)
    assert "calling raster_info" in messages
    streamed = next(data["tool"] for kind, data in frames if kind == "tool_call")
    xray_tool = frames[-2][1]["xray"]["tools"][0]
    assert {k: streamed[k] for k in ("name", "params", "is_error")} == {
        k: xray_tool[k] for k in ("name", "params", "is_error")
    }
    assert frames[-1][1]["answer"]["answer"] == ANSWER


def parse_sse(body: str) -> list[tuple[str, Any]]:
    frames = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        frames.append((lines["event"], json.loads(lines["data"])))
    return frames


async def test_llm_stats_reads_the_attempts_from_the_log(stack: Stack, llm_server: ScriptedServer) -> None:
    await ask(stack, llm_server, [text(BROKEN), text(ANSWER)], model="phi4-mini")
    env = {**stack.env, "REDIS_URL": stack.redis_url}
    argv = [sys.executable, "-m", "geogate.cli", "llm", "stats", "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=60)

    stats = json.loads(done.stdout)
    phi = stats["by_model"]["phi4-mini"]
    assert phi["turns"] == 1 and phi["first_attempt_success_rate"] == 0.0 and phi["mean_retries"] == 1.0
    assert dict(map(tuple, stats["error_kinds"]))["truncated"] >= 1
    assert stats["mean_tokens_per_conversation"] > 0


def test_llm_parse_reads_json_lines_on_stdin() -> None:
    tool = {"name": "raster_info", "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}}}
    line = json.dumps({"text": f"Sure: {CALL}", "tools": [tool]})
    argv = [sys.executable, "-m", "geogate.cli", "llm", "parse"]
    done = subprocess.run(argv, input=line + "\n", capture_output=True, text=True, env=dict(os.environ), timeout=60)

    assert done.returncode == 0
    assert json.loads(done.stdout) == {
        "format": "json",
        "calls": [{"tool": "raster_info", "params": {"uri": "dem.tif"}}],
        "errors": [],
        "content": f"Sure: {CALL}",
        "reasoning": "",
    }
