"""Argument validation shared by gateway and tool-calling workers: aliases normalised, errors named field by field."""

from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue, ValidationError

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
        raise ArgumentsInvalid(spec.name, [_field_error(e) for e in exc.errors()]) from exc
    return Validated(model.model_dump(mode="json"), used)


def _field_error(error: Any) -> FieldError:
    loc = ".".join(str(part) for part in error["loc"]) or "(arguments)"
    reason = "unknown argument" if error["type"] == "extra_forbidden" else error["msg"]
    return FieldError(loc, reason, error.get("input"))
