"""`justify_choice`: an internal job on the `llm` queue that asks the server-side model for a justification."""

from pydantic import Field, JsonValue

from schemas import tasks
from schemas.preflight.justification import Domain
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec


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
    queue=tasks.LLM,
    args=JustifyArgs,
    result=JustifyResult,
    hints=Hints(read_only=True),
    timeout_s=120.0,
)
