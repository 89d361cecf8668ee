"""The plans' jobs (`schemas/tools/plans.py`): `plan_run` (a dry run's answer, or a refusal naming every problem;
a valid plan is taken off this job by the hand-off and fans out as steps), the internal `plans.advance`, the
follow-up that pushes it on every step's outcome, and the fan-in's end of a plan."""

from schemas.tools.plans import (
    PLAN_ADVANCE,
    PLAN_RUN,
    AdvanceArgs,
    AdvanceResult,
    PlanArgs,
    PlanResult,
    StepOutcome,
    step_call_id,
)
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import follow_up, hand_off, job
from workers.plans import run
from workers.plans.validate import invalid, validate
from workers.tiling.declare import JOINS, Join


@job(PLAN_RUN)
def plan_run(args: PlanArgs, ctx: JobContext) -> PlanResult:
    """Validate the plan whole: every problem at once, else (dry run) its steps, estimate and needed justifications.

    Raises:
        JobFailed: `plan.invalid` naming each step and argument (`details.problems`), or `preflight.required`
            listing every justification the steps need; `plan.not_started` for a plan this worker cannot fan out.
    """
    checked = validate(args, ctx)
    if checked.problems:
        raise invalid(checked.problems)
    if checked.required and not args.dry_run:
        raise JobFailed("preflight.required", "the plan's steps need justifications first", details=checked.required)
    if not args.dry_run:
        raise JobFailed("plan.not_started", "this worker has no event store to run the plan's steps on")
    pending = [
        StepOutcome(id=s.id, tool=s.tool, call_id=step_call_id(ctx.call_id, i), status="pending")
        for i, s in enumerate(args.steps)
    ]
    return PlanResult(steps=pending, estimate=checked.estimate, dry_run=True, required=checked.required)


@job(PLAN_ADVANCE, own_lifecycle=True)
def plan_advance(args: AdvanceArgs, ctx: JobContext) -> AdvanceResult:
    """Append the plan's steps that are ready; run again, it appends nothing twice."""
    assert ctx.store is not None, "the runner passes the store"
    return AdvanceResult(call_id=args.call_id, enqueued=run.advance(ctx.store, args.call_id))


JOINS[PLAN_RUN.name] = Join(result=run.outcome, failed=run.failed)
follow_up(run.step_ended)
hand_off(run.started)
