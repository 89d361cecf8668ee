"""Compiling and checking a definition: templates parse, `next` exists, every step is reachable and can finish,
and every variable a template reads is defined on every path to it.

A definition's templates are in Jinja2 syntax, or all in the older `${…}` syntax, which is converted to Jinja2 here,
once, when the definition is compiled (`workers.workflows.dollar`)."""

from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from workers.workflows import dollar
from workers.workflows.definitions import BUILTINS, DefinitionError, Step, StepDef, Workflow, WorkflowDef
from workers.workflows.template import Template, TemplateSyntaxError
from workers.workflows.template import parse as parse_jinja

Parse = Callable[[str], Template]


def _parse(file: str | Path, step: str | None, source: str, what: str, parse: Parse) -> Template:
    try:
        return parse(source)
    except TemplateSyntaxError as exc:
        raise DefinitionError(file, f"{what}: {exc}", step) from exc


def _sources(spec: WorkflowDef) -> list[str]:
    """Every template text of the definition: instructions, tool-call arguments, the completion."""
    calls = [value for step in spec.steps for call in step.calls for value in call.with_.values()]
    return [spec.completion, *(step.instruction for step in spec.steps), *calls]


def _successors(file: str | Path, spec: WorkflowDef, index: int, ids: set[str]) -> dict[str, str]:
    step = spec.steps[index]
    if step.complete and step.next is not None:
        raise DefinitionError(file, "`complete: true` and `next` exclude each other", step.id)
    if step.complete:
        return {}
    if step.next is None and index + 1 == len(spec.steps):
        raise DefinitionError(file, "the last step needs `complete: true` (or a `next`)", step.id)
    nexts = {"": spec.steps[index + 1].id} if step.next is None else step.next
    nexts = {"": nexts} if isinstance(nexts, str) else nexts
    if not nexts or ("" in nexts and len(nexts) > 1):
        raise DefinitionError(file, "`next` choices need non-empty names", step.id)
    for target in nexts.values():
        if target not in ids:
            raise DefinitionError(file, f"`next` names unknown step {target!r}", step.id)
    return dict(nexts)


def _check_step_fields(file: str | Path, spec: WorkflowDef, step: StepDef) -> None:
    if step.save is None and (step.format != "text" or step.append):
        raise DefinitionError(file, "`format` and `append` need `save`", step.id)
    if step.require and step.format != "json":
        raise DefinitionError(file, "`require` needs `format: json`", step.id)
    if step.save in BUILTINS or step.save in spec.inputs:
        raise DefinitionError(file, f"`save: {step.save}` would hide an input or built-in variable", step.id)


def _compile_step(file: str | Path, spec: WorkflowDef, index: int, ids: set[str], parse: Parse) -> Step:
    step = spec.steps[index]
    _check_step_fields(file, spec, step)
    calls = tuple(
        (call.tool, {k: _parse(file, step.id, v, f"calls[{call.tool}].{k}", parse) for k, v in call.with_.items()})
        for call in step.calls
    )
    instruction = _parse(file, step.id, step.instruction, "instruction", parse)
    return Step(step, index + 1, instruction, calls, _successors(file, spec, index, ids))


def _check_ids(file: str | Path, spec: WorkflowDef) -> set[str]:
    ids: set[str] = set()
    for step in spec.steps:
        if step.id in ids:
            raise DefinitionError(file, "step id used twice", step.id)
        ids.add(step.id)
    return ids


def _walk(start: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
    seen, queue = set(start), deque(start)
    while queue:
        for nxt in edges.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def _predecessors(steps: dict[str, Step]) -> dict[str, set[str]]:
    preds: dict[str, set[str]] = {sid: set() for sid in steps}
    for sid, step in steps.items():
        for target in step.successors.values():
            preds[target].add(sid)
    return preds


def _check_graph(file: str | Path, steps: dict[str, Step]) -> None:
    forward = {sid: set(step.successors.values()) for sid, step in steps.items()}
    reachable = _walk([next(iter(steps))], forward)
    finishing = _walk([sid for sid, step in steps.items() if step.spec.complete], _predecessors(steps))
    for sid in steps:
        if sid not in reachable:
            raise DefinitionError(file, "unreachable: no path from the first step leads here", sid)
        if sid not in finishing:
            raise DefinitionError(file, "in a cycle with no exit: no path from here reaches `complete: true`", sid)


def _saves(step: Step) -> frozenset[str]:
    return frozenset({step.spec.save} if step.spec.save else ())


def defined_before(spec: WorkflowDef, steps: dict[str, Step]) -> dict[str, frozenset[str]]:
    """For each step, the variables defined on every path from the start to it (a must-be-defined dataflow)."""
    base = frozenset(spec.inputs) | BUILTINS
    top = base | {s.save for s in spec.steps if s.save}
    first = next(iter(steps))
    preds = _predecessors(steps)
    ins = {sid: base if sid == first else top for sid in steps}
    changed = True
    while changed:
        changed = False
        for sid in steps:
            new = base if sid == first else top
            for pred in preds[sid]:
                new &= ins[pred] | _saves(steps[pred])
            if new != ins[sid]:
                ins[sid], changed = new, True
    return ins


def _check_names(file: str | Path, step: str, templates: Iterable[Template], defined: frozenset[str]) -> None:
    for template in templates:
        missing = sorted(template.names() - defined)
        if missing:
            known = ", ".join(sorted(defined)) or "none"
            message = f"variable {missing[0]!r} is not defined on every path to this step (defined: {known})"
            raise DefinitionError(file, message, step)


def _check_variables(file: str | Path, spec: WorkflowDef, steps: dict[str, Step], completion: Template) -> None:
    ins = defined_before(spec, steps)
    for sid, step in steps.items():
        _check_names(file, sid, step.templates(), ins[sid])
        if step.spec.complete:
            _check_names(file, sid, [completion], ins[sid] | _saves(step))


def compile_workflow(file: str | Path, spec: WorkflowDef, sha256: str) -> Workflow:
    """Compile a parsed definition and check it.

    Raises:
        DefinitionError: naming `file` and the step at fault.
    """
    ids = _check_ids(file, spec)
    parse = dollar.parse if dollar.is_dollar(_sources(spec)) else parse_jinja
    steps = {s.id: _compile_step(file, spec, i, ids, parse) for i, s in enumerate(spec.steps)}
    completion = _parse(file, None, spec.completion, "completion", parse)
    _check_graph(file, steps)
    _check_variables(file, spec, steps, completion)
    return Workflow(spec, steps, completion, str(file), sha256)
