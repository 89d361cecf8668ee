"""Pure workflow transitions: definition + state + reply → next event; state → the tool answer."""

import json
import re
from datetime import datetime, timedelta

from pydantic import JsonValue

from schemas.events import WorkflowAdvanced, WorkflowCompleted, WorkflowExpired, WorkflowStarted
from schemas.events import WorkflowThoughtSubmitted as Submitted
from schemas.tools.workflows import NextAction, WorkflowAnswer
from workers.jobkit.errors import JobFailed
from workers.workflows.definitions import Step, StepDef, Workflow
from workers.workflows.state import WorkflowState
from workers.workflows.template import Template, TemplateError

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def _render(template: Template, context: dict[str, JsonValue]) -> str:
    try:
        return template.render(context, missing="empty")  # a short list renders as nothing, never as a failure
    except TemplateError as exc:
        raise JobFailed("workflow.template", f"cannot render the instruction: {exc}") from exc


def _builtins(state_id: str, workflow: Workflow) -> dict[str, JsonValue]:
    return {"state_id": state_id, "workflow": workflow.id, "thoughts": []}


def check_inputs(workflow: Workflow, inputs: dict[str, JsonValue]) -> None:
    """Refuse missing or unknown inputs, naming the field.

    Raises:
        JobFailed: `workflow.missing_input` or `workflow.unknown_input`.
    """
    for name, what in workflow.spec.inputs.items():
        if inputs.get(name) in (None, ""):
            raise JobFailed("workflow.missing_input", f"{workflow.id} needs input {name!r}: {what}", field=name)
    for name in inputs:
        if name not in workflow.spec.inputs:
            known = ", ".join(workflow.spec.inputs) or "none"
            raise JobFailed("workflow.unknown_input", f"{workflow.id} has no input {name!r} ({known})", field=name)


def start_event(
    workflow: Workflow, state_id: str, inputs: dict[str, JsonValue], now: datetime, ttl_s: float
) -> WorkflowStarted:
    """The `workflow.started` event of a new run, with the first instruction rendered."""
    check_inputs(workflow, inputs)
    first = workflow.first
    return WorkflowStarted(
        state_id=state_id,
        workflow=workflow.id,
        step=first.id,
        instruction=_render(first.instruction, {**inputs, **_builtins(state_id, workflow)}),
        inputs=inputs,
        ttl_s=ttl_s,
        expires_at=now + timedelta(seconds=ttl_s),
        definition_sha256=workflow.sha256,
    )


def _bad(message: str) -> JobFailed:
    return JobFailed("workflow.bad_thought", message, field="thought")


def _parse_json(spec: StepDef, text: str) -> JsonValue:
    fenced = _FENCE.match(text)
    try:
        value: JsonValue = json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError as exc:
        raise _bad(f"step {spec.id!r} wants a JSON reply; {exc.msg} at character {exc.pos}") from exc
    missing = [key for key in spec.require if not isinstance(value, dict) or key not in value]
    if missing:
        raise _bad(f"step {spec.id!r} wants a JSON object with {', '.join(spec.require)}; missing {missing}")
    return value


def parse_reply(spec: StepDef, text: str, previous: JsonValue) -> JsonValue:
    """The value a reply saves: text, a list of lines (bullets and numbers stripped) or JSON; appended if asked.

    Raises:
        JobFailed: `workflow.bad_thought` when the reply does not have the step's format.
    """
    value: JsonValue = text.strip()
    if spec.format == "list":
        items: list[JsonValue] = [_BULLET.sub("", line).strip() for line in text.splitlines() if line.strip()]
        if not items:
            raise _bad(f"step {spec.id!r} wants one item per line")
        value = items
    elif spec.format == "json":
        value = _parse_json(spec, text)
    if spec.append:
        value = [*(previous if isinstance(previous, list) else []), value]
    return value


def _choose(step: Step, text: str, choice: str | None) -> str | None:
    if not step.choices:
        return None
    wanted = (choice or text).strip().strip("\"'.").lower()
    if wanted in step.choices:
        return wanted
    options = ", ".join(step.choices)
    raise JobFailed("workflow.choice_required", f"step {step.id!r} needs `choice`: one of {options}", field="choice")


def reply_event(workflow: Workflow, state: WorkflowState, text: str, choice: str | None, call_id: str) -> Submitted:
    """The `workflow.thought_submitted` event for a reply to the current step (not appended yet).

    Raises:
        JobFailed: the reply has the wrong format or lacks a needed choice.
    """
    step = workflow.step(state.step)
    save = step.spec.save
    value = parse_reply(step.spec, text, state.saved.get(save)) if save else None
    chosen = _choose(step, text, choice)
    return Submitted(
        state_id=state.state_id,
        version=state.version + 1,
        step=step.id,
        text=text,
        save=save,
        value=value,
        choice=chosen,
        call_id=call_id,
    )


def advance_event(workflow: Workflow, state: WorkflowState, now: datetime) -> WorkflowAdvanced | WorkflowCompleted:
    """The event that follows the pending reply: the next step, or completion."""
    assert state.pending is not None
    step = workflow.step(state.pending.step)
    if step.spec.complete:
        message = _render(workflow.completion, state.context())
        return WorkflowCompleted(state_id=state.state_id, version=state.version + 1, step=step.id, message=message)
    target = workflow.step(step.successors[state.pending.choice or ""])
    return WorkflowAdvanced(
        state_id=state.state_id,
        version=state.version + 1,
        from_step=step.id,
        step=target.id,
        step_number=state.step_number + 1,
        instruction=_render(target.instruction, state.context()),
        expires_at=now + timedelta(seconds=state.ttl_s),
    )


def expiry_event(state: WorkflowState, now: datetime) -> WorkflowExpired | None:
    """`workflow.expired` when an active run is touched after its `expires_at`, else None."""
    if state.status != "active" or now <= state.expires_at:
        return None
    idle_s = (now - state.updated_at).total_seconds()
    return WorkflowExpired(state_id=state.state_id, version=state.version + 1, step=state.step, idle_s=idle_s)


def _next_action(step: Step, state: WorkflowState) -> NextAction:
    args: dict[str, JsonValue] = {"state_id": state.state_id, "version": state.version}
    if step.spec.save:
        args["thought"] = f"<your reply, saved as {step.spec.save}>"
    else:
        args["acknowledgment"] = "<what you did>"
    if step.choices:
        args["choice"] = f"<one of: {', '.join(step.choices)}>"
    return NextAction.of("submitThought" if step.spec.save else "continueWorkflow", args)


def _calls(step: Step, context: dict[str, JsonValue]) -> list[NextAction]:
    rendered: list[tuple[str, dict[str, JsonValue]]] = [
        (tool, {name: _render(value, context) for name, value in args.items()}) for tool, args in step.calls
    ]
    return [NextAction.of(tool, arguments) for tool, arguments in rendered]


def answer(workflow: Workflow | None, state: WorkflowState) -> WorkflowAnswer:
    """The tool answer for a state: the seed's shape, with the next call spelled out."""
    base = WorkflowAnswer(
        workflow=state.workflow,
        state_id=state.state_id,
        status=state.status,
        version=state.version,
        current_step=state.step_number,
        step=state.step,
        instruction=state.instruction,
        next_action=None,
        saved=dict(state.saved),
    )
    if state.status == "completed":
        return base.model_copy(update={"instruction": state.message})
    if state.status == "expired":
        note = f"This run has expired; start a new one with start_workflow(workflow={state.workflow!r})."
        return base.model_copy(update={"instruction": note})
    if workflow is None or state.step not in workflow.steps:
        raise JobFailed("workflow.definition_missing", f"workflow {state.workflow!r} no longer has step {state.step!r}")
    step = workflow.step(state.step)
    extra = {"title": step.spec.title, "call_first": _calls(step, state.context()), "choices": step.choices}
    return base.model_copy(update={**extra, "next_action": _next_action(step, state)})
