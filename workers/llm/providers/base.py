"""What every provider speaks: messages in, one completion out; the shared HTTP call and its error mapping."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx
from pydantic import JsonValue

from workers.llm.capabilities import ModelCapability
from workers.llm.errors import ProviderError

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class NativeCall:
    """A tool call the provider parsed itself; `arguments` may still be JSON text."""

    id: str
    name: str
    arguments: JsonValue


@dataclass(frozen=True)
class Message:
    """One chat message in the provider-neutral form the loop builds."""

    role: Role
    content: str
    tool_calls: tuple[NativeCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Completion:
    """One reply: its text, any native tool calls, token usage, and why it stopped."""

    text: str
    native_calls: tuple[NativeCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    provider_retries: int = 0
    reasoning: str = ""
    """Reasoning the server split off itself (`reasoning_content`, thinking blocks); never executed."""


class Provider(Protocol):
    """A chat model behind some API."""

    name: str
    model: str
    capability: ModelCapability

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        max_tokens: int,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Completion:
        """Send `messages` (native `tools` only when given) and return the reply.

        Raises:
            ProviderError: after backing off on 429/5xx/timeouts, or at once on other failures.
        """
        ...


async def post_json(client: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    """POST `body` and return the decoded JSON reply.

    Raises:
        ProviderError: retryable for timeouts, dropped connections, 408/409/429 and 5xx; not for other 4xx, nor
            for a connection refused or a host not found (`llm.unreachable`: no server there to wait for).
    """
    try:
        response = await client.post(url, headers=headers, json=body)
    except httpx.TimeoutException as exc:
        raise ProviderError("llm.timeout", f"{url} timed out", retryable=True) from exc
    except httpx.ConnectError as exc:  # refused, no such host: nothing answers there, so no backing off
        raise ProviderError(
            "llm.unreachable", f"nothing answers at {url}: {exc or type(exc).__name__}", retryable=False
        ) from exc
    except httpx.TransportError as exc:
        raise ProviderError("llm.connect", f"cannot reach {url}: {type(exc).__name__}", retryable=True) from exc
    if response.status_code >= 400:
        raise _status_error(response)
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderError("llm.bad_response", "the provider's reply is not JSON", retryable=False) from exc


def _status_error(response: httpx.Response) -> ProviderError:
    status = response.status_code
    retryable = status in (408, 409, 429) or status >= 500
    detail = response.text[:300]
    return ProviderError(
        f"llm.http_{status}", f"HTTP {status}: {detail}", retryable=retryable, retry_after_s=_retry_after(response)
    )


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None
