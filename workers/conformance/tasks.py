"""Jobs of the conformance suite's task fixtures (`schemas.tools.conformance.tasks`)."""

import time

from schemas.tools.conformance.tasks import (
    ConfirmDeleteArgs,
    ConfirmDeleteResult,
    MultiInputResult,
    NeverResult,
    NoArgs,
    SlowComputeArgs,
    SlowComputeResult,
)
from workers.conformance.questions import accepted, one_field
from workers.context import JobContext
from workers.errors import JobFailed
from workers.inputs import ask
from workers.jobs import job


def work(seconds: float, ctx: JobContext) -> None:
    """Hold the worker for `seconds` in 50 ms steps; `ctx.progress` raises when the call was cancelled."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))
        ctx.progress(seconds - left, seconds, "working")


@job("slow_compute")
def slow_compute(args: SlowComputeArgs, ctx: JobContext) -> SlowComputeResult:
    work(args.seconds, ctx)
    return SlowComputeResult(label=args.label, seconds=args.seconds, worker=ctx.worker)


@job("failing_job")
def failing_job(args: NoArgs, ctx: JobContext) -> NeverResult:
    work(1.0, ctx)
    raise JobFailed("fixture.failed", "failing_job always fails: this is the tool error the suite expects")


@job("protocol_error_job")
def protocol_error_job(args: NoArgs, ctx: JobContext) -> NeverResult:
    raise RuntimeError("protocol_error_job crashes on purpose")


@job("confirm_delete")
def confirm_delete(args: ConfirmDeleteArgs, ctx: JobContext) -> ConfirmDeleteResult:
    answers = ask(ctx, {"confirm": one_field(f"Delete {args.filename}?", "confirm", "boolean")})
    return ConfirmDeleteResult(filename=args.filename, deleted=bool(accepted(answers["confirm"]).get("confirm")))


@job("multi_input")
def multi_input(args: NoArgs, ctx: JobContext) -> MultiInputResult:
    answers = ask(
        ctx, {"name": one_field("What is your name?", "name"), "color": one_field("Favourite colour?", "color")}
    )
    return MultiInputResult(answers={k: str(accepted(v).get(k, "")) for k, v in answers.items()})
