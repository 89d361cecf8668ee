"""OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio) over httpx."""

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio
import httpx

from workers.llm.capabilities import ModelCapability
from workers.llm.config import LLMConfig
from workers.llm.errors import ProviderError
from workers.llm.providers.backoff import Sleep, with_backoff
from workers.llm.providers.base import Completion, Message, NativeCall, post_json


class OpenAIProvider:
    """`POST {base_url}/chat/completions`, with native `tools` when the loop passes them."""

    name = "openai"

    def __init__(self, config: LLMConfig, client: httpx.AsyncClient, *, sleep: Sleep = anyio.sleep) -> None:
        self.config = config
        self.model = config.model
        self.capability: ModelCapability = config.capability()
        self._client = client
        self._sleep = sleep
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        key = config.api_key.get_secret_value() if config.api_key else None
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        max_tokens: int,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Completion:
        """One chat completion; see `Provider.complete`."""
        body = request_body(self.model, messages, temperature, max_tokens, tools)
        send = partial(post_json, self._client, self._url, self._headers, body)
        reply, retries = await with_backoff(send, self.config.backoff, sleep=self._sleep)
        return parse_reply(reply, retries)


def request_body(
    model: str, messages: Sequence[Message], temperature: float, max_tokens: int, tools: Sequence[dict[str, Any]] | None
) -> dict[str, Any]:
    """The JSON body of a chat-completions request; MCP tools become `{"type": "function", …}` entries."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(m) for m in messages],
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if tools:
        body["tools"] = [_tool(t) for t in tools]
        body["tool_choice"] = "auto"
    return body


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {"type": "object", "properties": {}}
    function = {"name": tool["name"], "description": tool.get("description", ""), "parameters": schema}
    return {"type": "function", "function": function}


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [_call(c) for c in message.tool_calls]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def _call(call: NativeCall) -> dict[str, Any]:
    args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": args}}


def parse_reply(reply: Any, retries: int = 0) -> Completion:
    """A chat-completions reply as a `Completion`.

    Raises:
        ProviderError: the reply has no choices (not retryable).
    """
    try:
        choice = reply["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderError("llm.bad_response", "the reply has no choices", retryable=False) from exc
    usage = reply.get("usage") or {}
    return Completion(
        text=message.get("content") or "",
        native_calls=tuple(_native(i, c) for i, c in enumerate(message.get("tool_calls") or [])),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
        provider_retries=retries,
        reasoning=str(message.get("reasoning_content") or message.get("reasoning") or ""),
    )


def _native(index: int, call: dict[str, Any]) -> NativeCall:
    function = call.get("function") or {}
    return NativeCall(str(call.get("id") or f"call_{index}"), str(function.get("name", "")), function.get("arguments"))
