"""The conformance suite's task fixtures: jobs that run long, fail, crash, or ask inside a task (tasks extension)."""

from pydantic import Field

from schemas import tasks
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec


class SlowComputeArgs(ToolArgs):
    seconds: float = Field(default=1.0, ge=0, le=600)
    """How long the job works (in steps that honour cancellation)."""
    label: str = Field(default="", max_length=200)


class SlowComputeResult(ToolResult):
    label: str
    seconds: float
    worker: str

    def summary(self) -> str:
        return f"computed {self.label or 'result'} in {self.seconds:g} s on {self.worker}"


class NoArgs(ToolArgs):
    pass


class NeverResult(ToolResult):
    """These jobs never succeed."""


SLOW_COMPUTE = ToolSpec(
    name="slow_compute",
    title="Slow compute (conformance fixture)",
    description="Works for `seconds` seconds, then returns its label. A task for clients that declared tasks.",
    queue=tasks.GDAL,
    args=SlowComputeArgs,
    result=SlowComputeResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=660.0,
)

FAILING_JOB = ToolSpec(
    name="failing_job",
    title="Failing job (conformance fixture)",
    description="Always ends with a tool error after about a second. Needs the tasks extension.",
    queue=tasks.GDAL,
    args=NoArgs,
    result=NeverResult,
    hints=Hints(read_only=True),
    timeout_s=60.0,
)

PROTOCOL_ERROR_JOB = ToolSpec(
    name="protocol_error_job",
    title="Protocol error job (conformance fixture)",
    description="Crashes: the task ends `failed` with a JSON-RPC error.",
    queue=tasks.GDAL,
    args=NoArgs,
    result=NeverResult,
    hints=Hints(read_only=True),
    timeout_s=60.0,
)


class ConfirmDeleteArgs(ToolArgs):
    filename: str = Field(min_length=1, max_length=500)


class ConfirmDeleteResult(ToolResult):
    filename: str
    deleted: bool
    """Pretend: nothing is deleted; says whether the user confirmed."""

    def summary(self) -> str:
        return f"{self.filename}: {'deleted' if self.deleted else 'kept'}"


class MultiInputResult(ToolResult):
    answers: dict[str, str]

    def summary(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.answers.items()))


CONFIRM_DELETE = ToolSpec(
    name="confirm_delete",
    title="Confirm a delete (conformance fixture)",
    description="Asks the user to confirm inside the task (input_required), then reports what it would do.",
    queue=tasks.GDAL,
    args=ConfirmDeleteArgs,
    result=ConfirmDeleteResult,
    hints=Hints(read_only=True),
    timeout_s=3600.0,
    client_needs=frozenset({"elicitation"}),
)

MULTI_INPUT = ToolSpec(
    name="multi_input",
    title="Two questions (conformance fixture)",
    description="Asks two questions at once inside the task; completes when both are answered.",
    queue=tasks.GDAL,
    args=NoArgs,
    result=MultiInputResult,
    hints=Hints(read_only=True),
    timeout_s=3600.0,
    client_needs=frozenset({"elicitation"}),
)

TASK_SPECS: tuple[ToolSpec, ...] = (SLOW_COMPUTE, FAILING_JOB, PROTOCOL_ERROR_JOB, CONFIRM_DELETE, MULTI_INPUT)
