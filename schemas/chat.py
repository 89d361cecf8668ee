"""Models of the LLM host that cross the queue and the wire: chat request and answer, X-ray, extraction results."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas.ids import new_id

ErrorKind = Literal[
    "invalid_json",
    "invalid_markup",
    "truncated",
    "unknown_tool",
    "blocked_tool",
    "invalid_arguments",
    "missing_param",
    "unknown_param",
    "wrong_type",
    "invalid_value",
    "invalid_params",
    "too_many_calls",
    "empty_reply",
]
"""Every mistake a model can make in one reply; each has its own retry guidance."""

AttemptOutcome = Literal["calls", "answer", "invalid", "provider_error"]
"""What one model attempt produced. `provider_error` is the provider's fault, never counted as a model mistake."""

ChatOutcome = Literal["answered", "gave_up", "limit"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtractedCall(_Model):
    """One validated tool call found in a model's reply."""

    tool: str
    params: dict[str, JsonValue] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)
    """Argument names the model used that were renamed to canonical ones (`alias → canonical`)."""
    repaired: bool = False
    """True when the JSON was near-JSON that `json-repair` completed (a closed object, never truncated output)."""


class ExtractionError(_Model):
    """One mistake in a model's reply, with enough detail to tell the model what to change."""

    kind: ErrorKind
    message: str
    tool: str | None = None
    field: str | None = None
    """JSON path of the offending argument (`params.bbox.0`), when there is one."""
    suggestion: str | None = None


class ChatMessage(_Model):
    """A past turn of the conversation supplied by the caller."""

    role: Literal["user", "assistant"]
    content: str


class ChatRequest(_Model):
    """A question for the chat loop (`ask` tool, `POST /api/chat`)."""

    message: str = Field(min_length=1, max_length=20_000)
    history: list[ChatMessage] = Field(default_factory=list)
    conversation_id: str = Field(default_factory=new_id)
    client_id: str = "anonymous"


class XRayTool(_Model):
    """One tool call the loop ran."""

    name: str
    params: dict[str, JsonValue]
    duration_ms: float
    response_preview: str
    is_error: bool = False


class TimelineEntry(_Model):
    """One step of the conversation, `t_ms` after it started."""

    t_ms: float
    event: str


class Citation(_Model):
    """A source named by a tool's result (never synthesised from the arguments)."""

    tool: str
    source: str


class XRay(_Model):
    """What happened while answering: tools run, timeline, total time, citations from tool results."""

    tools: list[XRayTool] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    total_ms: float = 0.0
    citations: list[Citation] = Field(default_factory=list)


class ChatAnswer(_Model):
    """The loop's final answer, with its X-ray."""

    conversation_id: str
    answer: str
    outcome: ChatOutcome
    model: str
    xray: XRay
    attempts: int
    """Model attempts over the whole conversation, retries included."""
    errors: list[ExtractionError] = Field(default_factory=list)
    """The last attempt's mistakes when the model never recovered (`gave_up`)."""


class ProgressItem(_Model):
    """Streamed while the loop works."""

    kind: Literal["progress"] = "progress"
    message: str


class ToolCallItem(_Model):
    """Streamed after each tool call finishes."""

    kind: Literal["tool_call"] = "tool_call"
    tool: XRayTool


class XRayItem(_Model):
    """Streamed once, before the answer."""

    kind: Literal["xray"] = "xray"
    xray: XRay


class AnswerItem(_Model):
    """Streamed last."""

    kind: Literal["answer"] = "answer"
    answer: ChatAnswer


ChatStreamItem = Annotated[ProgressItem | ToolCallItem | XRayItem | AnswerItem, Field(discriminator="kind")]
"""One SSE event of `POST /api/chat/stream`; `kind` is the SSE event name."""


class ModelStats(_Model):
    """How one model (or one call format) did over many turns."""

    turns: int
    first_attempt_success_rate: float
    mean_retries: float


class LLMStats(_Model):
    """Metrics over `llm.attempt` events (`geogate llm stats`, ops views)."""

    by_model: dict[str, ModelStats] = Field(default_factory=dict)
    by_format: dict[str, ModelStats] = Field(default_factory=dict)
    """The same, by the format a turn's first attempt was written in (`native`, `hermes`, `qwen3_xml`, `json`,
    `text`…; `unknown` for events recorded before formats were)."""
    mean_retries: float = 0.0
    error_kinds: list[tuple[str, int]] = Field(default_factory=list)
    """Most common first."""
    provider_errors: int = 0
    tokens_per_conversation: dict[str, int] = Field(default_factory=dict)
    mean_tokens_per_conversation: float = 0.0
