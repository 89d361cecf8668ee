"""Argument validation shared by gateway and tool-calling workers: aliases normalised, errors named field by field."""

import difflib
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, JsonValue, ValidationError

from schemas.tools import ToolSpec


@dataclass(frozen=True)
class FieldError:
    field: str
    reason: str
    input: Any = None

    def as_dict(self) -> dict[str, JsonValue]:
        shown = self.input if isinstance(self.input, str | int | float | bool | type(None)) else repr(self.input)
        return {"field": self.field, "reason": self.reason, "input": shown}


@dataclass
class Validated:
    """Arguments ready to publish (canonical names, defaults filled), plus the aliases that were accepted."""

    args: dict[str, JsonValue]
    aliases_used: dict[str, str] = field(default_factory=dict)


class ArgumentsInvalid(Exception):
    """The arguments do not fit the tool's input model; `errors` names every offending field."""

    code = "args.invalid"

    def __init__(self, tool: str, errors: list[FieldError]) -> None:
        listed = "; ".join(f"{e.field}: {e.reason}" for e in errors)
        super().__init__(f"invalid arguments for {tool}: {listed}")
        self.tool = tool
        self.errors = errors


def normalise(spec: ToolSpec, raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Rename known aliases to canonical names; an alias never overrides the canonical name if both are given."""
    args, used = dict(raw), {}
    for alias, canonical in spec.aliases.items():
        if alias in args and canonical not in args:
            args[canonical] = args.pop(alias)
            used[alias] = canonical
    return args, used


def validate(spec: ToolSpec, raw: dict[str, Any], *, extra_allowed: frozenset[str] = frozenset()) -> Validated:
    """Validate `raw` against the tool's model.

    Raises:
        ArgumentsInvalid: with one `FieldError` per problem.
    """
    args, used = normalise(spec, {k: v for k, v in raw.items() if k not in extra_allowed})
    try:
        model = spec.args.model_validate(args)
    except ValidationError as exc:
        raise ArgumentsInvalid(spec.name, [_field_error(spec, e) for e in exc.errors()]) from exc
    return Validated(model.model_dump(mode="json"), used)


def _field_error(spec: ToolSpec, error: Any) -> FieldError:
    loc = ".".join(str(part) for part in error["loc"]) or "(arguments)"
    if error["type"] != "extra_forbidden":
        return FieldError(loc, error["msg"], error.get("input"))
    known = _known_names(spec, tuple(error["loc"][:-1]))
    close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1, cutoff=0.6)
    reason = f"unknown argument; did you mean {close[0]!r}?" if close else "unknown argument"
    return FieldError(loc, reason, error.get("input"))


def _known_names(spec: ToolSpec, parent: tuple[Any, ...]) -> list[str]:
    """The argument names accepted where an unknown one was found: the tool's own (and its aliases) at the top,
    a nested model's fields below it; none when the place is not a model's field."""
    model: Any = spec.args
    for part in parent:
        field_info = model.model_fields.get(part) if isinstance(part, str) else None
        model = field_info.annotation if field_info else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    names = [info.alias or name for name, info in model.model_fields.items()]
    return names + (list(spec.aliases) if not parent else [])
