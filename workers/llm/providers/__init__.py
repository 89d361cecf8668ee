"""Chat model providers: OpenAI-compatible and Anthropic, chosen by `LLMConfig.provider`."""

import anyio
import httpx

from workers.llm.config import LLMConfig
from workers.llm.providers.anthropic import AnthropicProvider
from workers.llm.providers.backoff import Sleep
from workers.llm.providers.base import Completion, Message, NativeCall, Provider
from workers.llm.providers.openai import OpenAIProvider


def build_provider(config: LLMConfig, client: httpx.AsyncClient, *, sleep: Sleep = anyio.sleep) -> Provider:
    """The provider `config` names, sending through `client` (the caller owns and closes it)."""
    if config.provider == "anthropic":
        return AnthropicProvider(config, client, sleep=sleep)
    return OpenAIProvider(config, client, sleep=sleep)


def http_client(config: LLMConfig) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` with the config's timeout; use it as `async with http_client(config) as client`."""
    return httpx.AsyncClient(timeout=httpx.Timeout(config.timeout_s, connect=10.0))


__all__ = [
    "AnthropicProvider",
    "Completion",
    "Message",
    "NativeCall",
    "OpenAIProvider",
    "Provider",
    "build_provider",
    "http_client",
]
