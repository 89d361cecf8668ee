"""Anthropic Messages API (`POST {base_url}/v1/messages`) over httpx, with native tool use."""

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

API_VERSION = "2023-06-01"


class AnthropicProvider:
    """Claude models; system messages go in `system`, tool results in `tool_result` blocks."""

    name = "anthropic"

    def __init__(self, config: LLMConfig, client: httpx.AsyncClient, *, sleep: Sleep = anyio.sleep) -> None:
        self.config = config
        self.model = config.model
        self.capability: ModelCapability = config.capability()
        self._client = client
        self._sleep = sleep
        base = config.base_url.rstrip("/")
        self._url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
        key = config.api_key.get_secret_value() if config.api_key else ""
        self._headers = {"x-api-key": key, "anthropic-version": API_VERSION}

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        max_tokens: int,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Completion:
        """One Messages call; see `Provider.complete`."""
        body = request_body(self.model, messages, min(temperature, 1.0), max_tokens, tools)
        send = partial(post_json, self._client, self._url, self._headers, body)
        reply, retries = await with_backoff(send, self.config.backoff, sleep=self._sleep)
        return parse_reply(reply, retries)


def request_body(
    model: str, messages: Sequence[Message], temperature: float, max_tokens: int, tools: Sequence[dict[str, Any]] | None
) -> dict[str, Any]:
    """The JSON body of a Messages request."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "messages": _merge([_message(m) for m in messages if m.role != "system"]),
    }
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [_tool(t) for t in tools]
    return body


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {"name": tool["name"], "description": tool.get("description", ""), "input_schema": schema}


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        block = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
        return {"role": "user", "content": [block]}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
    return {"role": message.role, "content": blocks}


def _merge(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive same-role messages (several tool results form one user turn, as the API requires)."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {"role": message["role"], "content": merged[-1]["content"] + message["content"]}
        else:
            merged.append(message)
    return merged


def parse_reply(reply: Any, retries: int = 0) -> Completion:
    """A Messages reply as a `Completion`.

    Raises:
        ProviderError: the reply has no content list (not retryable).
    """
    blocks = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(blocks, list):
        raise ProviderError("llm.bad_response", "the reply has no content", retryable=False)
    usage = reply.get("usage") or {}
    return Completion(
        text="".join(b.get("text", "") for b in blocks if b.get("type") == "text"),
        native_calls=tuple(
            NativeCall(str(b.get("id")), str(b.get("name")), b.get("input"))
            for b in blocks
            if b.get("type") == "tool_use"
        ),
        prompt_tokens=int(usage.get("input_tokens") or 0),
        completion_tokens=int(usage.get("output_tokens") or 0),
        finish_reason=reply.get("stop_reason"),
        provider_retries=retries,
        reasoning="".join(str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"),
    )
