"""The LLM host's settings section (`geogate.settings.LLMSettings`, `GEOGATE_LLM_*`) turned into what one request uses:
its provider connection and its loop's limits."""

from geogate.settings import Connection, LLMSettings
from schemas.tools.llm import AskArgs
from workers.llm.config import BackoffPolicy, LLMConfig, LoopPolicy

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
