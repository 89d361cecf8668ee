"""The chat loop over real HTTP against the scripted server (issue 7 acceptance; seeds 001 and 004)."""

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from pydantic import JsonValue

from schemas.chat import AnswerItem, ChatRequest, ProgressItem, ToolCallItem, XRayItem
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted
from tests.llm_server import ScriptedServer, failure, native, text
from tests.unit.workers.llm.samples import TOOLS
from workers.llm import (
    CallTool,
    LLMConfig,
    LoopPolicy,
    ProviderError,
    build_provider,
    http_client,
    run_chat,
    stream_chat,
)
from workers.llm.config import BackoffPolicy

pytestmark = pytest.mark.anyio

RESULT = {"uri": "dem.tif", "crs": "EPSG:4326", "source": "file:///data/dem.tif"}


class Tools:
    """A `call_tool` that records what reached it and checks it is valid (the worker side of the loop)."""

    def __init__(self, result: JsonValue = RESULT, *, is_error: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, JsonValue]]] = []
        self.result, self.is_error = result, is_error

    async def __call__(self, name: str, params: dict[str, JsonValue]) -> tuple[JsonValue, str, bool]:
        self.calls.append((name, params))
        return self.result, "", self.is_error


class Recorder:
    def __init__(self) -> None:
        self.attempts: list[LLMAttempted] = []
        self.lifecycle: list[Any] = []

    def attempt(self, event: LLMAttempted) -> None:
        self.attempts.append(event)

    async def life(self, event: Any) -> None:
        self.lifecycle.append(event)


async def ask(
    server: ScriptedServer,
    script: list[dict[str, Any]],
    *,
    model: str = "gemma3:4b",
    tools: CallTool | None = None,
    policy: LoopPolicy | None = None,
    recorder: Recorder | None = None,
    message: str = "What CRS is dem.tif in?",
) -> Any:
    server.script.load(script)
    config = LLMConfig(base_url=server.base_url, model=model, backoff=BackoffPolicy(max_retries=2))
    async with http_client(config) as client:
        provider = build_provider(config, client, sleep=_no_sleep)
        recorder = recorder or Recorder()
        with anyio.fail_after(10):
            return await run_chat(
                ChatRequest(message=message, conversation_id="c1"),
                provider=provider,
                tools=TOOLS,
                call_tool=tools or Tools(),
                policy=policy,
                on_attempt=recorder.attempt,
                on_lifecycle=recorder.life,
            )


async def _no_sleep(_: float) -> None:
    return None


async def test_native_calls_run_in_parallel_and_results_go_back_as_tool_messages(llm_server: ScriptedServer) -> None:
    """Seed 004: the model picks tools natively; both calls start before either finishes."""
    both_started = anyio.Event()
    started: list[str] = []

    async def call_tool(name: str, params: dict[str, JsonValue]) -> tuple[JsonValue, str, bool]:
        started.append(str(params["uri"]))
        if len(started) == 2:
            both_started.set()
        await both_started.wait()  # deadlocks (and fail_after fires) if the calls ran one after the other
        return {"source": f"file:///{params['uri']}"}, "", False

    script = [
        native(("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})),
        text("a.tif is EPSG:4326 and b.tif is EPSG:3857."),
    ]
    answer = await ask(llm_server, script, model="gpt-4o-mini", tools=call_tool)

    first, second = llm_server.script.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["raster_info", "raster_reproject", "workspace_delete"]
    assert [m["role"] for m in second["messages"]][-3:] == ["assistant", "tool", "tool"]
    assert answer.outcome == "answered" and answer.answer.startswith("a.tif")
    assert sorted(t.params["uri"] for t in answer.xray.tools) == ["a.tif", "b.tif"]
    assert {c.source for c in answer.xray.citations} == {"file:///a.tif", "file:///b.tif"}


async def test_prompt_based_call_buried_in_prose_is_extracted(llm_server: ScriptedServer) -> None:
    """Seed 001: a model without native tools writes the call inside prose; tools are described in the prompt."""
    tools = Tools()
    script = [
        text('Let me look.\n```json\n{"tool": "raster_info", "params": {"uri": "dem.tif"}}\n```\nOne moment.'),
        text("dem.tif is in EPSG:4326 (source: file:///data/dem.tif)."),
    ]
    answer = await ask(llm_server, script, tools=tools)

    first, second = llm_server.script.requests
    assert "tools" not in first
    assert '{"tool": "tool_name"' in first["messages"][0]["content"]
    assert second["messages"][-1]["role"] == "user" and "Tool results" in second["messages"][-1]["content"]
    assert tools.calls == [("raster_info", {"uri": "dem.tif"})]
    assert answer.outcome == "answered"


async def test_malformed_json_is_retried_with_the_error_and_a_lower_temperature(llm_server: ScriptedServer) -> None:
    """Seed 001: a broken call is fed back with guidance; the temperature goes 0.7 → 0.6."""
    tools, recorder = Tools(), Recorder()
    script = [
        text('Calling: {"tool": raster_info, params: {uri: dem.tif}'),
        text('{"tool": "raster_info", "params": {"uri": "dem.tif"}}'),
        text("EPSG:4326."),
    ]
    await ask(llm_server, script, tools=tools, recorder=recorder)

    assert llm_server.script.temperatures == [0.7, 0.6, 0.7]
    retry = llm_server.script.requests[1]["messages"][-1]["content"]
    assert "Attempt 1: truncated" in retry and "complete call" in retry and "raster_info" in retry
    assert [(a.turn, a.attempt, a.outcome, a.error_kind) for a in recorder.attempts] == [
        (1, 1, "invalid", "truncated"),
        (1, 2, "calls", None),
        (2, 1, "answer", None),
    ]
    assert tools.calls == [("raster_info", {"uri": "dem.tif"})]


async def test_near_json_is_repaired_without_a_retry(llm_server: ScriptedServer) -> None:
    tools = Tools()
    script = [text("{'tool': 'raster_info', 'params': {'uri': 'dem.tif',, 'band': 2,}}"), text("done")]
    await ask(llm_server, script, tools=tools)

    assert tools.calls == [("raster_info", {"uri": "dem.tif", "band": 2})]
    assert llm_server.script.temperatures == [0.7, 0.7]


async def test_wrong_tool_name_gets_did_you_mean_and_never_reaches_call_tool(llm_server: ScriptedServer) -> None:
    tools = Tools()
    script = [
        text('{"tool": "raster-info", "params": {"uri": "dem.tif"}}'),
        text('{"tool": "raster_info", "params": {"uri": "dem.tif"}}'),
        text("done"),
    ]
    await ask(llm_server, script, tools=tools)

    retry = llm_server.script.requests[1]["messages"][-1]["content"]
    assert "did you mean 'raster_info'" in retry
    assert tools.calls == [("raster_info", {"uri": "dem.tif"})]


async def test_aliased_parameters_are_renamed_and_wrong_ones_retried(llm_server: ScriptedServer) -> None:
    """translation-helps #24: recoverable argument mistakes are tolerated (aliases) or precisely reported."""
    tools, recorder = Tools(), Recorder()
    script = [
        text('{"tool": "raster_reproject", "params": {"path": "dem.tif", "dstCrs": "4326"}}'),
        text(
            '{"tool": "raster_reproject", "params": {"uri": "dem.tif", "dst_crs": "EPSG:4326", "resampling": "fast"}}'
        ),
        text('{"tool": "raster_reproject", "params": {"uri": "dem.tif", "dstCrs": "EPSG:4326"}}'),
        text("Reprojected."),
    ]
    await ask(llm_server, script, tools=tools, recorder=recorder)

    assert [a.error_kind for a in recorder.attempts] == ["unknown_param", "invalid_value", None, None]
    retry = llm_server.script.requests[2]["messages"][-1]["content"]
    assert retry.index("Attempt 1:") < retry.index("Attempt 2:") and '"bilinear"' in retry
    assert tools.calls == [("raster_reproject", {"uri": "dem.tif", "dst_crs": "EPSG:4326"})]


async def test_a_model_that_never_recovers_gives_up_after_the_attempt_limit(llm_server: ScriptedServer) -> None:
    tools, recorder = Tools(), Recorder()
    script = [text('{"tool": "nope", "params": {}}')] * 3
    answer = await ask(llm_server, script, tools=tools, recorder=recorder)

    assert answer.outcome == "gave_up" and answer.errors[0].kind == "unknown_tool"
    assert llm_server.script.temperatures == [0.7, 0.6, 0.5]
    assert [a.attempt for a in recorder.attempts] == [1, 2, 3]
    assert tools.calls == []
    assert isinstance(recorder.lifecycle[0], LLMConversationStarted)
    assert isinstance(recorder.lifecycle[-1], LLMConversationFinished)
    assert recorder.lifecycle[-1].outcome == "gave_up"


async def test_attempt_limit_is_configurable(llm_server: ScriptedServer) -> None:
    policy = LoopPolicy(max_attempts=5, temperature=0.5, temperature_step=0.2)
    answer = await ask(llm_server, [text('{"tool": "x"}')] * 5, policy=policy)

    assert answer.attempts == 5
    assert llm_server.script.temperatures == [0.5, 0.3, 0.1, 0.0, 0.0]


async def test_blocked_tools_are_never_offered_and_never_run(llm_server: ScriptedServer) -> None:
    tools, recorder = Tools(), Recorder()
    policy = LoopPolicy(blocked_tools=("*_delete",))
    script = [
        native(("workspace_delete", {"uri": "dem.tif"})),
        native(("workspace_delete", {"uri": "dem.tif"})),
        native(("workspace_delete", {"uri": "dem.tif"})),
    ]
    answer = await ask(llm_server, script, model="gpt-4o", tools=tools, policy=policy, recorder=recorder)

    offered = [t["function"]["name"] for t in llm_server.script.requests[0]["tools"]]
    assert "workspace_delete" not in offered
    assert [a.error_kind for a in recorder.attempts] == ["blocked_tool"] * 3
    assert answer.outcome == "gave_up" and tools.calls == []


async def test_tool_call_budget_is_enforced_across_turns(llm_server: ScriptedServer) -> None:
    tools = Tools()
    policy = LoopPolicy(max_tool_calls=2)
    many = native(("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"}), ("raster_info", {"uri": "c"}))
    script = [
        many,
        native(("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})),
        native(("raster_info", {"uri": "c.tif"})),
        text("Answer from two results."),
    ]
    answer = await ask(llm_server, script, model="gpt-4o", tools=tools, policy=policy)

    assert len(tools.calls) == 2
    last = llm_server.script.requests[-1]
    assert "tools" not in last and "budget" in str(last["messages"])
    assert answer.outcome == "answered"


async def test_total_token_limit_stops_the_conversation(llm_server: ScriptedServer) -> None:
    policy = LoopPolicy(max_total_tokens=300)
    big = dict(text('{"tool": "raster_info", "params": {"uri": "a.tif"}}'), usage=[290, 20])
    answer = await ask(llm_server, [big, text("never sent")], policy=policy)

    assert answer.outcome == "limit" and len(llm_server.script.requests) == 1


async def test_long_history_is_trimmed_to_the_prompt_budget(llm_server: ScriptedServer) -> None:
    from schemas.chat import ChatMessage

    history = [ChatMessage(role="user", content=f"old question {i} " + "x" * 2000) for i in range(20)]
    llm_server.script.load([text("ok")])
    config = LLMConfig(base_url=llm_server.base_url, model="gemma3:4b")
    async with http_client(config) as client:
        request = ChatRequest(message="newest question", history=history)
        await run_chat(
            request, provider=build_provider(config, client), tools=TOOLS, call_tool=Tools(), policy=LoopPolicy()
        )

    sent = llm_server.script.requests[0]["messages"]
    assert sent[-1]["content"] == "newest question" and "old question 19" in sent[-2]["content"]
    assert "old question 0 " not in str(sent)
    assert sum(len(m["content"]) for m in sent) <= LoopPolicy().max_prompt_tokens * 4


async def test_provider_errors_back_off_and_are_not_model_mistakes(llm_server: ScriptedServer) -> None:
    recorder = Recorder()
    script = [failure(429, retry_after=1), failure(503), text("No tools needed.")]
    answer = await ask(llm_server, script, recorder=recorder)

    assert answer.outcome == "answered"
    assert [(a.attempt, a.outcome, a.provider_retries) for a in recorder.attempts] == [(1, "answer", 2)]


async def test_a_provider_that_keeps_failing_raises_after_recording_the_attempt(llm_server: ScriptedServer) -> None:
    recorder = Recorder()
    with pytest.raises(ProviderError) as caught:
        await ask(llm_server, [failure(500)] * 3, recorder=recorder)

    assert caught.value.code == "llm.http_500" and caught.value.retryable
    assert [(a.outcome, a.error_kind, a.provider_retries) for a in recorder.attempts] == [
        ("provider_error", "llm.http_500", 2)
    ]


async def test_empty_tool_results_are_handed_back_as_no_data(llm_server: ScriptedServer) -> None:
    """Seed 004: the system prompt says to admit when tools return nothing; the model is told so explicitly."""
    script = [text('{"tool": "raster_info", "params": {"uri": "x.tif"}}'), text("The tools returned nothing.")]
    answer = await ask(llm_server, script, tools=Tools(result=None))

    first, second = llm_server.script.requests
    assert "say clearly that the tools returned nothing" in first["messages"][0]["content"]
    assert "(the tool returned no data)" in second["messages"][-1]["content"]
    assert answer.xray.citations == []


async def test_citations_come_from_results_not_arguments(llm_server: ScriptedServer) -> None:
    """translation-helps-mcp built citations from arguments; ours come from what tools returned."""
    script = [text('{"tool": "raster_info", "params": {"uri": "arg-only.tif"}}'), text("ok")]
    answer = await ask(llm_server, script, tools=Tools(result={"source": "https://data.example/dem"}))

    assert [c.source for c in answer.xray.citations] == ["https://data.example/dem"]


async def test_stream_yields_progress_tool_calls_xray_then_answer(llm_server: ScriptedServer) -> None:
    llm_server.script.load([native(("raster_info", {"uri": "a.tif"})), text("done")])
    config = LLMConfig(base_url=llm_server.base_url, model="gpt-4o")
    async with http_client(config) as client:
        stream: AsyncIterator[Any] = stream_chat(
            ChatRequest(message="hi"), provider=build_provider(config, client), tools=TOOLS, call_tool=Tools()
        )
        with anyio.fail_after(10):
            kinds = [type(item) async for item in stream]

    assert kinds == [ProgressItem, ProgressItem, ToolCallItem, XRayItem, AnswerItem]


async def test_reasoning_is_recorded_never_run_and_never_part_of_the_answer(llm_server: ScriptedServer) -> None:
    """Issue 13: a call written in reasoning is not executed; the reasoning text is kept in `llm.attempt`."""
    tools, recorder = Tools(), Recorder()
    script = [
        text(
            '<think>\nMaybe {"tool": "workspace_delete", "params": {"uri": "dem.tif"}}? No.\n</think>\n'
            '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "dem.tif"}}\n</tool_call>'
        ),
        text(
            "<think>\nThe result says EPSG:4326.\n</think>\n\ndem.tif is in EPSG:4326 (source: file:///data/dem.tif)."
        ),
    ]
    answer = await ask(llm_server, script, tools=tools, recorder=recorder)

    assert tools.calls == [("raster_info", {"uri": "dem.tif"})]
    assert answer.answer == "dem.tif is in EPSG:4326 (source: file:///data/dem.tif)."
    assert [(a.outcome, a.format) for a in recorder.attempts] == [("calls", "hermes"), ("answer", "text")]
    assert recorder.attempts[0].reasoning.startswith('Maybe {"tool": "workspace_delete"')
    assert recorder.attempts[1].reasoning == "The result says EPSG:4326."


async def test_a_reply_of_reasoning_alone_is_retried_as_empty(llm_server: ScriptedServer) -> None:
    recorder = Recorder()
    script = [
        text('<think>I will call {"tool": "raster_info", "params": {"uri": "dem.tif"}}</think>'),
        text("EPSG:4326."),
    ]
    answer = await ask(llm_server, script, recorder=recorder)

    assert answer.answer == "EPSG:4326."
    assert [(a.outcome, a.error_kind) for a in recorder.attempts] == [("invalid", "empty_reply"), ("answer", None)]
    assert "only reasoning" in recorder.attempts[0].errors[0].message
