"""`LLMSettings`: the LLM host's environment (`GEOGATE_LLM_*`), read by the `ask` job when it runs."""

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from geogate.eventlog.redaction import register_secret
from schemas.tools.llm import AskArgs
from workers.llm.config import BackoffPolicy, Connection, LLMConfig, LoopPolicy

ALWAYS_BLOCKED = ("ask",)
"""The model never calls the chat loop itself."""


class LLMSettings(BaseSettings, Connection):
    """The provider connection (`Connection`'s fields as `GEOGATE_LLM_PROVIDER`, `_BASE_URL`, `_API_KEY`, `_MODEL`,
    …) and the server's limits; a request may lower the limits, never raise them."""

    model_config = SettingsConfigDict(env_prefix="GEOGATE_LLM_", extra="ignore")

    backoff_retries: int = Field(default=4, ge=0)
    rate_limit_per_minute: int = Field(default=30, ge=1)
    """`ask` requests per client (actor) per minute, counted in Redis."""
    blocked_tools: str = ""
    """Comma-separated fnmatch patterns (`*_delete,raster_convert`): never offered, never run."""
    max_attempts: int = Field(default=3, ge=1)
    max_turns: int = Field(default=4, ge=1)
    max_tool_calls: int = Field(default=8, ge=0)
    max_total_tokens: int = Field(default=60_000, ge=256)
    tool_timeout_s: float = Field(default=120.0, gt=0)
    """Longest the loop waits for one tool call it made."""

    def model_post_init(self, context: object) -> None:
        register_secret(self.api_key.get_secret_value() if self.api_key else None)  # never in the log (issue 14)

    def config(self, model: str | None = None) -> LLMConfig:
        """The provider connection, for `model` when the request names one."""
        connection = {name: getattr(self, name) for name in Connection.model_fields}
        return LLMConfig(
            **{**connection, "model": model or self.model}, backoff=BackoffPolicy(max_retries=self.backoff_retries)
        )

    def blocked(self) -> tuple[str, ...]:
        """The blocked patterns, `ask` always among them."""
        listed = tuple(p.strip() for p in self.blocked_tools.split(",") if p.strip())
        return (*ALWAYS_BLOCKED, *listed)

    def policy(self, args: AskArgs) -> LoopPolicy:
        """The loop's limits: the server's, lowered where the request asks for less."""
        return LoopPolicy(
            max_attempts=_lowest(self.max_attempts, args.max_attempts),
            max_turns=_lowest(self.max_turns, args.max_turns),
            max_tool_calls=_lowest(self.max_tool_calls, args.max_tool_calls),
            max_total_tokens=_lowest(self.max_total_tokens, args.max_total_tokens),
            blocked_tools=self.blocked(),
        )


def _lowest(server: int, requested: int | None) -> int:
    return server if requested is None else min(server, requested)
