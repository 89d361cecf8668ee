"""A plan's checks that need no files, pure: step ids, tools, references (to earlier steps, to a field their tool's
result has, of the type the argument takes) and every step's arguments against its tool's schema. References are
typed by the referenced tool's result model: each is replaced by a value of that type (the tool's example result's
when it has one) before the step's arguments are validated, so a wrong type is reported on the argument.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from schemas.call_plan import CallPlan, plan_call
from schemas.tools import ToolSpec
from schemas.tools.plans import REF, PlanStep, Problem
from schemas.validation import ArgumentsInvalid

PLACEHOLDERS: dict[str, JsonValue] = {"string": "ref", "integer": 0, "number": 0.0, "boolean": False}


@dataclass(frozen=True)
class Checked:
    """The problems found, and each valid step's call plan (references as placeholders)."""

    problems: list[Problem]
    plans: dict[str, CallPlan]


def references(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """`(argument path, reference)` for every `{"$ref": …}` in `value` (arguments as JSON)."""
    if isinstance(value, dict):
        if set(value) == {REF} and isinstance(value[REF], str):
            yield where, value[REF]
            return
        for key, item in value.items():
            yield from references(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from references(item, f"{where}[{i}]")


def dependencies(step: PlanStep) -> set[str]:
    """The steps `step` waits for: those it refers to and those it names in `after`."""
    return {ref.split(".", 1)[0] for _, ref in references(step.args)} | set(step.after)


def substituted(value: Any, resolve: Any) -> Any:
    """`value` with every reference replaced by `resolve(reference)`."""
    if isinstance(value, dict):
        if set(value) == {REF} and isinstance(value[REF], str):
            return resolve(value[REF])
        return {key: substituted(item, resolve) for key, item in value.items()}
    if isinstance(value, list):
        return [substituted(item, resolve) for item in value]
    return value


def check_steps(steps: list[PlanStep], specs: Mapping[str, ToolSpec]) -> Checked:
    """Every problem of `steps` that needs no file, all at once; `specs` are the tools a step may call."""
    problems: list[Problem] = []
    plans: dict[str, CallPlan] = {}
    seen: dict[str, ToolSpec | None] = {}
    for step in steps:
        found = _step_problems(step, seen, specs)
        problems += found
        spec = specs.get(step.tool)
        seen.setdefault(step.id, spec)
        if spec is None:
            continue
        try:
            plan = plan_call(spec, substituted(step.args, lambda ref: _placeholder(ref, seen)))
        except ArgumentsInvalid as exc:
            told = {p.argument for p in found}
            problems += [_invalid(step.id, e.field, e.reason) for e in exc.errors if e.field not in told]
            continue
        if not found:
            plans[step.id] = plan
    return Checked(problems, plans)


def _invalid(step: str, field: str, reason: str) -> Problem:
    return Problem(step=step, argument=field, code="args.invalid", message=reason)


def _step_problems(step: PlanStep, seen: Mapping[str, ToolSpec | None], specs: Mapping[str, ToolSpec]) -> list[Problem]:
    problems = []
    if step.id in seen:
        problems.append(
            Problem(step=step.id, argument="", code="plan.duplicate_step", message="two steps have this id")
        )
    if step.tool not in specs:
        message = f"no tool {step.tool!r} can be a step of a plan"
        problems.append(Problem(step=step.id, argument="tool", code="plan.unknown_tool", message=message))
    for name in step.after:
        if name not in seen:
            problems.append(_unknown_step(step.id, "after", name, seen))
    gated = _gated(specs.get(step.tool))
    for where, ref in references(step.args):
        problems += _reference_problems(step.id, where, ref, seen)
        if where in gated:
            problems.append(_gated_reference(step.id, where, gated[where]))
    return problems


def _gated(spec: ToolSpec | None) -> dict[str, str]:
    """The arguments of `spec` a justification is keyed from, with the domain of each."""
    return {source: item.domain for item in (spec.preflight if spec else ()) for source in item.args.values()}


def _gated_reference(step: str, where: str, domain: str) -> Problem:
    """A justified choice taken from an earlier result: its justification could not be asked for before the plan
    runs, nor the step held for it once it is due, so the plan is refused."""
    message = (
        f"{where} needs a justification ({domain}) and so must be given as a value, not a reference: the plan "
        "asks for every justification before it runs (a dry run lists them)"
    )
    return Problem(step=step, argument=where, code="plan.justified_reference", message=message)


def _reference_problems(step: str, where: str, ref: str, seen: Mapping[str, ToolSpec | None]) -> list[Problem]:
    target, _, path = ref.partition(".")
    if target not in seen:
        return [_unknown_step(step, where, target, seen)]
    spec = seen[target]
    if spec is None:
        return []  # the target's own problem is reported on it
    fields, _ = _result_schema_at(spec, path)
    if fields is not None:
        message = f"{ref!r}: {spec.name}'s result has no {path!r}" if path else f"{ref!r} names no field of the result"
        return [Problem(step=step, argument=where, code="plan.bad_reference", message=message, valid=fields)]
    return []


def _unknown_step(step: str, where: str, name: str, seen: Mapping[str, ToolSpec | None]) -> Problem:
    message = f"{name!r} is not a step listed before this one"
    return Problem(step=step, argument=where, code="plan.bad_reference", message=message, valid=sorted(seen))


def _placeholder(ref: str, seen: Mapping[str, ToolSpec | None]) -> JsonValue:
    target, _, path = ref.partition(".")
    spec = seen.get(target)
    if spec is None:
        return "ref"  # a reference already reported: its argument's type is not checked
    _, schema = _result_schema_at(spec, path)
    example = _example_at(spec.example_result, path)
    kind = schema.get("type")
    if example is not None and (kind is None or PLACEHOLDERS.get(kind, example).__class__ is example.__class__):
        return example
    return PLACEHOLDERS.get(kind, {} if kind == "object" else [] if kind == "array" else "ref")  # type: ignore[arg-type]


def _result_schema_at(spec: ToolSpec, path: str) -> tuple[list[str] | None, dict[str, Any]]:
    """The JSON schema of field `path` (dotted) of `spec`'s result: `(None, schema)`, or `(valid names, {})` at the
    first part the result does not have."""
    root = spec.result.model_json_schema()
    defs = root.get("$defs", {})
    node: dict[str, Any] = root
    for part in path.split(".") if path else [""]:
        node = _concrete(node, defs)
        properties = node.get("properties")
        if properties is None:
            if node.get("type") == "array" or "additionalProperties" in node or not node:
                return None, {}  # a list or a free mapping: not checked further
            return [], {}
        if part not in properties:
            return sorted(properties), {}
        node = properties[part]
    return None, _concrete(node, defs)


def _concrete(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """`node` with `$ref` followed and an optional's `null` branch dropped."""
    if "$ref" in node:
        return _concrete(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    return _concrete(branches[0], defs) if len(branches) == 1 else node


def _example_at(example: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(example, dict) or part not in example:
            return None
        example = example[part]
    return example
