"""The LLM host: providers, tool-call extraction, validated retries, safety limits and the chat loop."""

from workers.llm.capabilities import CAPABILITIES, ModelCapability, capability_for
from workers.llm.config import BackoffPolicy, LLMConfig, LoopPolicy
from workers.llm.errors import LLMError, ProviderError
from workers.llm.extract import Extraction, extract_calls
from workers.llm.loop import OnEvent, run_chat, stream_chat
from workers.llm.metrics import attempt_stats
from workers.llm.parse_cli import parse_lines
from workers.llm.planned import CallTool
from workers.llm.providers import build_provider, http_client
from workers.llm.providers.base import Provider

__all__ = [
    "CAPABILITIES",
    "BackoffPolicy",
    "CallTool",
    "Extraction",
    "LLMConfig",
    "LLMError",
    "LoopPolicy",
    "ModelCapability",
    "OnEvent",
    "Provider",
    "ProviderError",
    "attempt_stats",
    "build_provider",
    "capability_for",
    "extract_calls",
    "http_client",
    "parse_lines",
    "run_chat",
    "stream_chat",
]
