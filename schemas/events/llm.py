"""Events of the conversation aggregate (`conversation:<id>`): started → attempt* → finished."""

from typing import Literal

from pydantic import Field

from schemas.chat import AttemptOutcome, ChatOutcome, ErrorKind, ExtractionError
from schemas.events.base import EventData


def conversation_aggregate(conversation_id: str) -> str:
    """The aggregate of one chat conversation."""
    return f"conversation:{conversation_id}"


class LLMConversationStarted(EventData):
    """The chat loop took a question."""

    type: Literal["llm.conversation_started"] = "llm.conversation_started"
    conversation_id: str
    model: str
    provider: str
    mode: Literal["native", "prompt"]
    """Native function calling, or tool calls extracted from the reply text."""
    tools: list[str] = Field(default_factory=list)
    """Tools offered to the model (blocked ones already removed)."""

    def describe(self) -> str:
        """One line for timelines and progress messages."""
        return f"{self.model} ({self.mode} tool calling, {len(self.tools)} tools)"


class LLMAttempted(EventData):
    """One request to the model and what came of it (every attempt is recorded; docs/llm-host.md)."""

    type: Literal["llm.attempt"] = "llm.attempt"
    conversation_id: str
    turn: int
    """1-based step of the loop; each turn ends with tool calls or the answer."""
    attempt: int
    """1-based attempt within the turn; attempt 1 is the model's first try."""
    model: str
    provider: str
    temperature: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    outcome: AttemptOutcome
    error_kind: ErrorKind | str | None = None
    """The first mistake's kind, or the provider error code (`http_429`, `timeout`) for `provider_error`."""
    errors: list[ExtractionError] = Field(default_factory=list)
    calls: int = 0
    """Valid tool calls in the reply."""
    provider_retries: int = 0
    """Backed-off provider failures (429, 5xx, timeouts) before this attempt got a reply."""
    latency_ms: float = 0.0
    format: str | None = None
    """How the reply wrote its calls: `native` (parsed by the server), a text format the extractor
    recognised (`hermes`, `qwen3_xml`, `harmony`, …, `json`), or `text` when it held none."""
    reasoning: str = ""
    """The reply's reasoning (`<think>`, analysis channel, the server's `reasoning_content`): kept for the
    record, never executed; the loop keeps at most its first 20,000 characters."""

    def describe(self) -> str:
        """One line for timelines and progress messages."""
        kind = f" ({self.error_kind})" if self.error_kind else ""
        return (
            f"model attempt {self.attempt} of turn {self.turn} (temperature {self.temperature:g}): {self.outcome}{kind}"
        )


class LLMConversationFinished(EventData):
    """The chat loop returned an answer or gave up."""

    type: Literal["llm.conversation_finished"] = "llm.conversation_finished"
    conversation_id: str
    outcome: ChatOutcome
    attempts: int
    tool_calls: int
    total_ms: float
