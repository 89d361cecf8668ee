"""The language model's tools: `ask`, a question answered by the LLM host with the registry's tools and returned with
its X-ray; and `justify_choice`, an internal job that asks the server-side model for a preflight justification."""

from pydantic import Field, JsonValue

from schemas import routes
from schemas.chat import ChatMessage, ChatOutcome, ExtractionError, XRay
from schemas.preflight.justification import Domain
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec


class AskArgs(ToolArgs):
    question: str = Field(min_length=1, max_length=20_000)
    """What to answer, from tool data only."""
    history: list[ChatMessage] = Field(default_factory=list, max_length=50)
    """Earlier turns of the conversation, oldest first; trimmed to the token budget."""
    model: str | None = Field(default=None, min_length=1, max_length=200, pattern=r"^[\w.:/@+-]+$")
    """The model to ask; the server's `GEOGATE_LLM_MODEL` when omitted."""
    max_tool_calls: int | None = Field(default=None, ge=0, le=32)
    """At most this many tool calls (never more than the server allows)."""
    max_attempts: int | None = Field(default=None, ge=1, le=10)
    """Model attempts per turn, the first included (never more than the server allows)."""
    max_turns: int | None = Field(default=None, ge=1, le=16)
    """Rounds of tool calls before the model must answer (never more than the server allows)."""
    max_total_tokens: int | None = Field(default=None, ge=256)
    """Prompt and completion tokens over the whole conversation (never more than the server allows)."""


class AskResult(ToolResult):
    conversation_id: str
    """The `conversation:<id>` aggregate holding every `llm.*` event of this answer (the call id)."""
    answer: str
    """The model's answer; empty when it never produced a valid reply."""
    outcome: ChatOutcome
    model: str
    attempts: int
    """Model attempts over the whole conversation, retries included."""
    xray: XRay
    """Tools run (name, params, duration, response preview), timeline, total time, citations from tool results;
    rebuilt from the event log."""
    errors: list[ExtractionError] = Field(default_factory=list)
    """The last attempt's mistakes when the model never recovered."""

    def summary(self) -> str:
        if self.outcome == "answered":
            return self.answer
        return f"no answer ({self.outcome} after {self.attempts} model attempts)"


ASK = ToolSpec(
    name="ask",
    title="Ask a question answered with Geogate's tools",
    description=(
        "Answers a question with a language model that calls Geogate's own tools (raster_info, vector_info, …) "
        "and answers only from their results. Returns the answer and an X-ray: the tools run with their "
        "parameters, durations and response previews, a timeline, and citations taken from the tool results."
    ),
    queue=routes.LLM,
    args=AskArgs,
    result=AskResult,
    hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
    timeout_s=300.0,
    aliases={"message": "question", "prompt": "question", "query": "question"},
    runs_long=True,
    examples=({"question": "Which rasters in the workspace cover Vienna, and in which CRS?"},),
)


# --- justify_choice (internal) ----------------------------------------------------------------------------


class JustifyArgs(ToolArgs):
    domain: Domain
    prompt: str = Field(min_length=1, max_length=100)
    """A justification prompt's name (`justify_crs_selection`, …)."""
    prompt_args: dict[str, JsonValue]


class JustifyResult(ToolResult):
    justification: dict[str, JsonValue]
    model: str
    attempts: int

    def summary(self) -> str:
        return f"justified by {self.model} in {self.attempts} attempt(s)"


JUSTIFY_CHOICE = ToolSpec(
    name="justify_choice",
    title="Justify a choice with the server-side model",
    description="Internal: the preflight gate's server-side provider for clients that cannot sample.",
    queue=routes.LLM,
    args=JustifyArgs,
    result=JustifyResult,
    hints=Hints(read_only=True),
    timeout_s=120.0,
    internal=True,
)
