"""Settings of the LLM host as value objects (the provider connection, backoff, and the loop's limits), and how the
settings section (`geogate.settings.LLMSettings`, `GEOGATE_LLM_*`) becomes what one request uses."""

from pydantic import BaseModel, ConfigDict, Field

from geogate.settings import Connection, LLMSettings
from schemas.tools.llm import AskArgs
from workers.llm.capabilities import ModelCapability, capability_for


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BackoffPolicy(_Config):
    """Retries of provider failures (429, 5xx, timeouts): exponential with full jitter, `Retry-After` honoured."""

    max_retries: int = Field(default=4, ge=0)
    base_s: float = Field(default=0.5, ge=0)
    max_s: float = Field(default=20.0, ge=0)


class LLMConfig(Connection):
    """The connection one request uses (`workers.llm.config.config_for`), with its backoff policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backoff: BackoffPolicy = BackoffPolicy()

    def capability(self) -> ModelCapability:
        """The capability row for this model, with the overrides applied."""
        cap = capability_for(self.model)
        native = cap.native_tools if self.native_tools is None else self.native_tools
        template = cap.native_format if self.prompt_format == "native" and cap.native_format else cap.template
        return ModelCapability(native, self.template or template, cap.context_tokens, cap.native_format)


class LoopPolicy(_Config):
    """How hard the loop tries and what it refuses (the LLM host's safety boundaries, enforced; docs/llm-host.md)."""

    max_attempts: int = Field(default=3, ge=1)
    """Model attempts per turn, the first included."""
    temperature: float = Field(default=0.7, ge=0, le=2)
    temperature_step: float = Field(default=0.1, ge=0)
    min_temperature: float = Field(default=0.0, ge=0)
    max_turns: int = Field(default=4, ge=1)
    """Rounds of tool calls before the model must answer."""
    max_tool_calls: int = Field(default=8, ge=0)
    """Tool calls per request, over all turns."""
    blocked_tools: tuple[str, ...] = ()
    """fnmatch patterns (`*_delete`, `admin.*`): never offered, never run."""
    max_prompt_tokens: int = Field(default=6000, ge=256)
    """Estimated prompt size; older history is trimmed to fit (capped by the model's context)."""
    max_completion_tokens: int = Field(default=1024, ge=16)
    max_total_tokens: int = Field(default=60_000, ge=256)
    """Prompt + completion tokens over the whole conversation; the loop stops at this limit."""
    preview_chars: int = Field(default=200, ge=0)
    result_chars: int = Field(default=4000, ge=100)
    """Tool result text handed back to the model, per call."""

    def temperature_for(self, attempt: int) -> float:
        """Temperature of 1-based `attempt`: 0.7, 0.6, 0.5, … never below `min_temperature`."""
        return round(max(self.min_temperature, self.temperature - self.temperature_step * (attempt - 1)), 4)


ALWAYS_BLOCKED = ("ask",)
"""The model never calls the chat loop itself."""


def config_for(llm: LLMSettings, model: str | None = None) -> LLMConfig:
    """The provider connection, for `model` when the request names one."""
    connection = {name: getattr(llm, name) for name in Connection.model_fields}
    return LLMConfig(
        **{**connection, "model": model or llm.model}, backoff=BackoffPolicy(max_retries=llm.backoff_retries)
    )


def blocked(llm: LLMSettings) -> tuple[str, ...]:
    """The blocked patterns, `ask` always among them."""
    return (*ALWAYS_BLOCKED, *llm.blocked_tools)


def policy_for(llm: LLMSettings, args: AskArgs) -> LoopPolicy:
    """The loop's limits: the server's, lowered where the request asks for less."""
    return LoopPolicy(
        max_attempts=_lowest(llm.max_attempts, args.max_attempts),
        max_turns=_lowest(llm.max_turns, args.max_turns),
        max_tool_calls=_lowest(llm.max_tool_calls, args.max_tool_calls),
        max_total_tokens=_lowest(llm.max_total_tokens, args.max_total_tokens),
        blocked_tools=blocked(llm),
    )


def _lowest(server: int, requested: int | None) -> int:
    return server if requested is None else min(server, requested)
