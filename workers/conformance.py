"""Jobs of the conformance suite's task fixtures (`schemas.tools.conformance`)."""

import time
from typing import Any

from schemas.tools.conformance import (
    ConfirmDeleteArgs,
    ConfirmDeleteResult,
    MultiInputResult,
    NeverResult,
    NoArgs,
    SlowComputeArgs,
    SlowComputeResult,
)
from workers.context import JobContext
from workers.errors import JobFailed
from workers.inputs import ask
from workers.jobs import job


def elicit(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    """An MRTR `elicitation/create` request for one form field."""
    schema = {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def _content(answer: Any) -> dict[str, Any]:
    """The form content of an accepted elicitation answer, else {}."""
    if isinstance(answer, dict) and answer.get("action") == "accept" and isinstance(answer.get("content"), dict):
        return answer["content"]
    return {}


def _work(seconds: float, ctx: JobContext) -> None:
    """Hold the worker for `seconds` in 50 ms steps; `ctx.progress` raises when the call was cancelled."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))
        ctx.progress(seconds - left, seconds, "working")


@job("slow_compute")
def slow_compute(args: SlowComputeArgs, ctx: JobContext) -> SlowComputeResult:
    _work(args.seconds, ctx)
    return SlowComputeResult(label=args.label, seconds=args.seconds, worker=ctx.worker)


@job("failing_job")
def failing_job(args: NoArgs, ctx: JobContext) -> NeverResult:
    _work(1.0, ctx)
    raise JobFailed("fixture.failed", "failing_job always fails: this is the tool error the suite expects")


@job("protocol_error_job")
def protocol_error_job(args: NoArgs, ctx: JobContext) -> NeverResult:
    raise RuntimeError("protocol_error_job crashes on purpose")


@job("confirm_delete")
def confirm_delete(args: ConfirmDeleteArgs, ctx: JobContext) -> ConfirmDeleteResult:
    answers = ask(ctx, {"confirm": elicit(f"Delete {args.filename}?", "confirm", "boolean")})
    return ConfirmDeleteResult(filename=args.filename, deleted=bool(_content(answers["confirm"]).get("confirm")))


@job("multi_input")
def multi_input(args: NoArgs, ctx: JobContext) -> MultiInputResult:
    answers = ask(ctx, {"name": elicit("What is your name?", "name"), "color": elicit("Favourite colour?", "color")})
    return MultiInputResult(answers={k: str(_content(v).get(k, "")) for k, v in answers.items()})
