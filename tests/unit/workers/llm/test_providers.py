"""Providers: request bodies, reply parsing, and backoff on provider failures (issue 7 item 1)."""

import httpx
import pytest

from tests.llm_server import Script, failure, mock_transport, raw, text
from tests.unit.workers.llm.samples import RASTER_INFO
from workers.llm import LLMConfig, ProviderError, build_provider
from workers.llm.capabilities import capability_for
from workers.llm.config import BackoffPolicy
from workers.llm.providers import Message, NativeCall
from workers.llm.providers.backoff import delay_s

pytestmark = pytest.mark.anyio


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def provider_for(script: Script, sleeps: Sleeps, **config: object) -> tuple[object, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=mock_transport(script))
    config = {"backoff": BackoffPolicy(max_retries=3), **config}
    settings = LLMConfig(base_url="http://llm.test/v1", api_key="k", **config)
    return build_provider(settings, client, sleep=sleeps), client


async def test_anthropic_messages_carry_system_tools_and_merged_tool_results() -> None:
    script, sleeps = Script(), Sleeps()
    reply = {
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "t1", "name": "raster_info", "input": {"uri": "a.tif"}},
        ],
        "usage": {"input_tokens": 30, "output_tokens": 7},
        "stop_reason": "tool_use",
    }
    script.load([raw(reply)])
    provider, client = provider_for(script, sleeps, provider="anthropic", model="claude-sonnet-4-5")
    call = NativeCall("t0", "raster_info", {"uri": "x"})
    messages = [
        Message("system", "rules"),
        Message("user", "q"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "r1", tool_call_id="t0"),
        Message("tool", "r2", tool_call_id="t0"),
    ]
    async with client:
        completion = await provider.complete(messages, temperature=0.7, max_tokens=100, tools=[RASTER_INFO])

    body = script.requests[0]
    assert body["system"] == "rules" and body["tools"][0]["input_schema"] == RASTER_INFO["inputSchema"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "tool_result"]
    assert completion.native_calls == (NativeCall("t1", "raster_info", {"uri": "a.tif"}),)
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == ("Checking.", 30, 7)


async def test_openai_sends_native_tools_only_when_asked() -> None:
    script, sleeps = Script(), Sleeps()
    script.load([text("a"), text("b")])
    provider, client = provider_for(script, sleeps, model="gpt-4o")
    async with client:
        await provider.complete([Message("user", "q")], temperature=0.3, max_tokens=50, tools=[RASTER_INFO])
        await provider.complete([Message("user", "q")], temperature=0.3, max_tokens=50)

    with_tools, without = script.requests
    assert with_tools["tools"][0]["function"]["parameters"] == RASTER_INFO["inputSchema"]
    assert with_tools["tool_choice"] == "auto" and "tools" not in without


async def test_429_and_5xx_back_off_with_retry_after_and_then_succeed() -> None:
    script, sleeps = Script(), Sleeps()
    script.load([failure(429, retry_after=7), failure(502), text("ok")])
    provider, client = provider_for(script, sleeps)
    async with client:
        completion = await provider.complete([Message("user", "q")], temperature=0.7, max_tokens=10)

    assert completion.text == "ok" and completion.provider_retries == 2
    assert sleeps.delays[0] >= 7 and len(sleeps.delays) == 2


async def test_client_errors_are_not_retried() -> None:
    script, sleeps = Script(), Sleeps()
    script.load([failure(401)])
    provider, client = provider_for(script, sleeps)
    async with client:
        with pytest.raises(ProviderError) as caught:
            await provider.complete([Message("user", "q")], temperature=0.7, max_tokens=10)

    assert (caught.value.code, caught.value.retryable, sleeps.delays) == ("llm.http_401", False, [])


async def test_timeouts_are_retryable_provider_errors() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    sleeps = Sleeps()
    settings = LLMConfig(base_url="http://llm.test/v1", backoff=BackoffPolicy(max_retries=2))
    async with httpx.AsyncClient(transport=httpx.MockTransport(slow)) as client:
        with pytest.raises(ProviderError) as caught:
            await build_provider(settings, client, sleep=sleeps).complete(
                [Message("user", "q")], temperature=0.7, max_tokens=10
            )

    assert (caught.value.code, caught.value.retries, len(sleeps.delays)) == ("llm.timeout", 2, 2)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_failure_after_retries_says_how_many_retries_came_before_it(provider: str) -> None:
    """What keeps the retries here (providers/backoff.py): the count reaches the `provider_error` attempt event."""
    script, sleeps = Script(), Sleeps()
    script.load([failure(429), failure(503), failure(401), text("never sent")])
    provider, client = provider_for(script, sleeps, provider=provider)
    async with client:
        with pytest.raises(ProviderError) as caught:
            await provider.complete([Message("user", "q")], temperature=0.7, max_tokens=10)

    assert (caught.value.code, caught.value.retries) == ("llm.http_401", 2)
    assert len(script.requests) == caught.value.retries + 1 == len(sleeps.delays) + 1


async def test_a_retry_after_longer_than_the_policy_allows_waits_only_max_s() -> None:
    script, sleeps = Script(), Sleeps()
    script.load([failure(429, retry_after=600), failure(429, retry_after=30), text("ok")])
    provider, client = provider_for(script, sleeps, backoff=BackoffPolicy(max_retries=3, max_s=12.5))
    async with client:
        completion = await provider.complete([Message("user", "q")], temperature=0.7, max_tokens=10)

    assert (completion.provider_retries, sleeps.delays) == (2, [12.5, 12.5])


def test_backoff_delay_is_jittered_exponential_and_capped() -> None:
    policy = BackoffPolicy(base_s=1, max_s=10)
    assert [delay_s(policy, n, 1.0) for n in range(5)] == [1, 2, 4, 8, 10]
    assert delay_s(policy, 3, 0.25) == 2
    assert delay_s(policy, 0, 0.0, retry_after_s=60) == 10


@pytest.mark.parametrize(
    ("model", "native", "template"),
    [
        ("gpt-4o-mini", True, "generic"),
        ("llama3.1:8b", True, "llama3"),
        ("meta-llama/Llama-3.2-3B-Instruct", True, "llama3"),
        ("qwen2.5-coder:7b", False, "code"),
        ("deepseek-coder-v2", False, "code"),
        ("mistral:7b-instruct", False, "generic"),
        ("some-new-model", False, "generic"),
    ],
)
def test_capability_table_decides_native_and_template(model: str, native: bool, template: str) -> None:
    cap = capability_for(model)
    assert (cap.native_tools, cap.template) == (native, template)


def test_config_overrides_the_capability_table() -> None:
    cap = LLMConfig(model="gpt-4o", native_tools=False, template="code").capability()
    assert (cap.native_tools, cap.template) == (False, "code")
