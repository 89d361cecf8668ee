"""Result handlers (docs/handlers.md): the script a tool call may carry, its limits, and what running it produced."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

MAX_SCRIPT_CHARS = 64_000
"""A handler is a filter, not a program: anything longer is almost certainly a mistake."""
MAX_SCRIPT_LINES = 2_000

HandlerLanguage = Literal["python", "jmespath"]

HandlerErrorCode = Literal[
    "handler.syntax_error",
    "handler.exception",
    "handler.timeout",
    "handler.memory_limit",
    "handler.output_too_large",
    "handler.forbidden",
    "handler.not_json",
    "handler.no_result",
    "handler.tool_error",
    "handler.crashed",
]
"""Stable codes: the client retries with a fixed handler on these, never re-running the tool."""

Isolation = Literal["bwrap", "unshare", "process", "in-process"]
"""How a handler was contained. `bwrap`: namespaces + minimal read-only root; `unshare`: namespaces on the
host filesystem; `process`: a separate process with rlimits only; `in-process`: JMESPath, which runs no code."""


class ResultHandler(BaseModel):
    """A script run against a tool's raw output; only its value goes back to the client."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: HandlerLanguage = "python"
    script: str | list[str]
    """Python source (a list is joined with newlines) or one JMESPath expression."""

    @field_validator("script")
    @classmethod
    def _bounded(cls, script: str | list[str]) -> str | list[str]:
        text = script if isinstance(script, str) else "\n".join(script)
        if not text.strip():
            raise ValueError("the script is empty")
        if len(text) > MAX_SCRIPT_CHARS:
            raise ValueError(f"the script has {len(text)} characters; the limit is {MAX_SCRIPT_CHARS}")
        if text.count("\n") >= MAX_SCRIPT_LINES:
            raise ValueError(f"the script has more than {MAX_SCRIPT_LINES} lines")
        return script

    @property
    def source(self) -> str:
        """The script as one string."""
        return self.script if isinstance(self.script, str) else "\n".join(self.script)


class HandlerLimits(BaseModel):
    """What one handler run may use. Enforced by the kernel (rlimits) and by the supervising processes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int = Field(default=2, ge=1, le=60)
    wall_seconds: float = Field(default=5.0, gt=0, le=300)
    """Includes time spent in chained tool calls."""
    memory_mb: int = Field(default=256, ge=16, le=8192)
    """Address space the handler may add on top of what the injected `tool_output` already takes."""
    max_output_bytes: int = Field(default=1_000_000, ge=1_024, le=64_000_000)
    """Size of the JSON-encoded result."""
    max_stdout_bytes: int = Field(default=8_192, ge=0, le=1_000_000)
    """What `print` may write; the rest is dropped (and said so)."""
    max_tool_calls: int = Field(default=8, ge=0, le=100)
    """Budget for `tools.<name>(...)` calls per handler run."""


class HandlerError(BaseModel):
    """Why a handler failed. The tool itself succeeded; only the handler needs fixing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: HandlerErrorCode
    message: str
    line: int | None = None
    """Line of the script where the error arose, when known (always for syntax errors)."""
    column: int | None = None
    """Column (1-based) of a syntax error, when the parser says (JMESPath does)."""
    exc_type: str | None = None
    """Python exception class name, for `handler.exception` and friends."""


class HandlerOutcome(BaseModel):
    """The result of one handler run: a JSON value, or an error; never both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: JsonValue = None
    error: HandlerError | None = None
    language: HandlerLanguage
    isolation: Isolation
    seccomp: bool = False
    """Whether a syscall filter was active for this run."""
    duration_ms: float
    """Time from the request reaching the sandbox host to the outcome, including chained tool calls."""
    tool_calls: int = 0
    stdout: str = ""
    """What the handler printed, truncated to `HandlerLimits.max_stdout_bytes`."""

    @property
    def ok(self) -> bool:
        """True when the handler produced a value."""
        return self.error is None
