"""A plan run on the log, as one call whose steps are child calls, like tiles (docs/plans.md).

- **Start** (`hand_off`): a valid plan's call appends the steps that depend on nothing, each a `tool.requested`
  (`<plan>.<index>`) with its message, then `tool.fanned_out` with one "tile" per step; all fenced on the plan's
  attempt and keyed, so a re-dispatched start appends nothing twice. The plan then holds no worker.
- **Advance** (`plans.advance`): every step's outcome carries, in its own append, the push of an advance job
  (`follow_up`); it appends each step whose dependencies have all succeeded, with its references resolved from
  their results, while the plan has not ended nor been cancelled. Appends are keyed: concurrent or redelivered
  advances append each step once.
- **End**: the tiles' fan-in counts the steps on the log (`geogate.calls.fan_in`) and runs once, when every step
  succeeded or one failed; `JOINS` gives it the plan's result (each step's outcome) and the failed step's error.
  Cancel sets the plan's flag, which its steps read as tiles read their parent's.
"""

import json
import logging
from typing import Any

from pydantic import JsonValue

from geogate.calls import keys
from geogate.calls.held import restored
from geogate.calls.projections.call_state import TERMINAL
from geogate.calls.publish import fan_in_op, follow, pushed_ahead, request_effects, request_event
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect, Op
from schemas.call_plan import plan_call
from schemas.events import Event, ToolFannedOut, ToolRequested, ToolStarted
from schemas.ids import call_aggregate
from schemas.plan_check import dependencies, substituted
from schemas.tools import SPECS
from schemas.tools.plans import PLAN_ADVANCE, PLAN_RUN, PlanArgs, PlanResult, PlanStep, StepOutcome, step_call_id
from schemas.tools.tiling import tile_of
from workers.jobkit.errors import JobFailed
from workers.jobs import Finished, Next, Started
from workers.plans.validate import Validated, validate

logger = logging.getLogger(__name__)


def started(begun: Started) -> bool:
    """A valid, justified plan's call (not a dry run) fanned out as its first steps (True); anything else runs its
    job, which validates again and fails naming every problem or the justifications needed, or answers the dry run."""
    data, ctx = begun.call, begun.ctx
    if data.tool != PLAN_RUN.name or ctx.store is None:
        return False
    args = PlanArgs.model_validate(data.args)
    if args.dry_run or _refused(validate(args, ctx, issued=False)):  # the job issues the hashes it names
        return False
    current = Expect(ctx.store.live.call(data.call_id), "attempt", "in", (begun.started.payload(ToolStarted).attempt,))
    if not _append_ready(ctx.store, begun.requested, args, begun.started, current):
        return True  # superseded by a re-dispatch: that run fans out
    steps = len(args.steps)
    fanned = ToolFannedOut(
        call_id=data.call_id, tiles=steps, columns=steps, rows=1, tile_size=1, width=steps, height=1, folder=""
    )
    ctx.store.append(follow(begun.started, fanned), keys.fanned_out_key(data.call_id), expect=current)
    return True


def _refused(checked: Validated) -> bool:
    """A plan with problems, or whose steps need justifications first: its job answers why."""
    return bool(checked.problems or checked.required)


def step_ended(finished: Finished) -> Next | None:
    """A plan step's outcome carries the push of the plan's advance job (a follow-up, `workers.jobs`)."""
    step, store = tile_of(finished.call.call_id), finished.ctx.store
    if step is None or store is None or store.redis.hget(store.live.call(step[0]), "tool") != PLAN_RUN.name.encode():
        return None
    return Next(finished.outcome, [advance_op(finished.outcome, step[0])])


def advance_op(cause: Event, call_id: str) -> Op:
    """The push of `plans.advance` for plan call `call_id`, caused by `cause`; the command is never appended."""
    return pushed_ahead(PLAN_ADVANCE, cause, call_id)


def advance(store: EventStore, call_id: str) -> list[str]:
    """Append the steps of plan `call_id` that are ready; the ids of those this run appended."""
    requested = _requested(store, call_id)
    if requested is None:
        return []
    key = store.live.call(call_id)
    status, cancel = store.redis.hmget(key, ["status", "cancel"])
    if (status or b"").decode() in TERMINAL:
        return []
    args = PlanArgs.model_validate(restored(store.redis, store.keys, requested.payload(ToolRequested)).args)
    if cancel == b"1":  # between steps nothing else would end it: the fan-in ends it cancelled
        store.redis.rpush(*_push(fan_in_op(requested, call_id)))
        return []
    live = [Expect(key, "status", "not_in", TERMINAL), Expect(key, "cancel", "not_in", ("1",))]
    return _append_ready(store, requested, args, requested, live) or []


def _push(op: Op) -> tuple[str, Any]:
    return op.key, op.args[0]


def _append_ready(
    store: EventStore, requested: Event, args: PlanArgs, cause: Event, expect: Expect | list[Expect]
) -> list[str] | None:
    """Append every step not yet requested whose dependencies all succeeded; None when the fence refused."""
    plan_id = requested.payload(ToolRequested).call_id
    results = _results(store, plan_id, args.steps)
    appended = []
    for index, step in enumerate(args.steps):
        if step.id in results or store.call_state(step_call_id(plan_id, index)) is not None:
            continue
        if not all(results.get(d) is not None for d in dependencies(step)):
            continue
        event, arguments = _step_request(step, index, requested, cause, results)
        effects = request_effects(event, arguments, store.keys, store.dedupe_ttl_s)
        child = keys.requested_key(event.payload(ToolRequested).call_id)
        outcome = store.append(event, child, expect=expect, effects=effects)
        if outcome.refused:
            return None
        appended.append(step.id)
    return appended


def _step_request(
    step: PlanStep, index: int, requested: Event, cause: Event, results: dict[str, Any]
) -> tuple[Event, dict[str, JsonValue]]:
    """The step's `tool.requested`, its references resolved. A step whose references no longer fit (a list index
    past the end of a result, a value of another type: their shapes were checked up front) is appended as it
    resolved, so that its own job fails with `args.invalid` naming the argument, and the plan with it naming the
    step: an advance that raised would leave the plan with no outcome."""
    spec = SPECS[step.tool]
    try:
        call = plan_call(spec, substituted(step.args, lambda ref: _resolve(ref, results)))
        arguments, needed = call.args, [item.hash for item in call.needed]
    except Exception:
        arguments, needed = substituted(step.args, lambda ref: _lenient(ref, results)), []
    event = request_event(
        spec,
        arguments,
        call_id=step_call_id(requested.payload(ToolRequested).call_id, index),
        actor=requested.actor,
        trace_id=requested.trace_id,
        causation_id=cause.id,
        justified_by=needed,
    )
    return event, arguments


def _lenient(ref: str, results: dict[str, Any]) -> JsonValue:
    """`ref` resolved, or left as the reference where it does not resolve."""
    try:
        return _resolve(ref, results)
    except (KeyError, IndexError, TypeError, ValueError):
        return {"$ref": ref}


def _resolve(ref: str, results: dict[str, Any]) -> Any:
    target, _, path = ref.partition(".")
    value = results[target]
    for part in path.split(".") if path else []:
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _results(store: EventStore, plan_id: str, steps: list[PlanStep]) -> dict[str, Any]:
    """The result of each step that succeeded, by step id; None for one that ended otherwise."""
    found: dict[str, Any] = {}
    for index, step in enumerate(steps):
        state = store.call_state(step_call_id(plan_id, index))
        if state is not None and state.terminal:
            found[step.id] = store.value_of(state.result, state.output_ref) if state.status == "succeeded" else None
    return found


def _requested(store: EventStore, call_id: str) -> Event | None:
    events = store.read_aggregate(call_aggregate(call_id))
    return next((e for e in events if isinstance(e.data, ToolRequested)), None)


def outcome(store: EventStore, data: ToolRequested) -> PlanResult:
    """The plan's result once every step succeeded: each step with its call and result."""
    args = PlanArgs.model_validate(restored(store.redis, store.keys, data).args)
    steps = []
    for index, step in enumerate(args.steps):
        call_id = step_call_id(data.call_id, index)
        state = store.call_state(call_id)
        result = store.value_of(state.result, state.output_ref) if state is not None else None
        steps.append(StepOutcome(id=step.id, tool=step.tool, call_id=call_id, status="succeeded", result=result))
    return PlanResult(steps=steps, estimate=len(steps))


def failed(store: EventStore, call_id: str, index: int) -> JobFailed:
    """The plan's error when step `index` failed: the step, its tool and the cause (`details.step`)."""
    raw = store.redis.hget(store.live.call(call_id), "args")
    args = PlanArgs.model_validate(json.loads(raw) if raw else {"steps": [{"id": "unknown", "tool": "?"}]})
    step = args.steps[index] if index < len(args.steps) else PlanStep(id=f"s{index}", tool="?")
    state = store.call_state(step_call_id(call_id, index))
    code, cause = (state.error_code, state.error_message) if state else ("step.failed", "unknown")
    details = {"step": step.id, "index": index, "tool": step.tool, "code": code}
    return JobFailed(code or "step.failed", f"step {step.id!r} ({step.tool}) failed: {cause}", details=details)
