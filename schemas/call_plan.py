"""One call plan, pure: validate the arguments (and an optional result handler), then name the justifications the
call needs. The gateway (async) and workers (sync: `ask`, handler chaining) plan every call here, then gate it,
append its `tool.requested` with the queue message (`geogate.calls.publish`) and wait for the outcome.
"""

from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue, ValidationError

from schemas.preflight.keys import Needed, needed_for
from schemas.result_handlers import ResultHandler
from schemas.tools import ToolSpec
from schemas.tools.handlers import HANDLER_ARG
from schemas.validation import ArgumentsInvalid, FieldError, Validated, validate

HANDLER_FIELDS = frozenset({HANDLER_ARG})


@dataclass(frozen=True)
class CallPlan:
    """A valid call: normalised arguments, the handler that will shape its result, the justifications it needs."""

    spec: ToolSpec
    valid: Validated
    handler: dict[str, JsonValue] | None
    needed: list[Needed]

    @property
    def args(self) -> dict[str, JsonValue]:
        return self.valid.args


def plan_call(spec: ToolSpec, arguments: dict[str, Any], handler: Any = None, *, handlers: bool = False) -> CallPlan:
    """Validate a call to `spec`; every field error comes back at once, the handler's included.

    `handlers` admits the `result_handler` argument (client calls); `handler` is one given in `_meta` instead.

    Raises:
        ArgumentsInvalid: the arguments (or the handler) do not fit.
    """
    errors: list[FieldError] = []
    valid = shaped = None
    try:
        valid = validate(spec, arguments, extra_allowed=HANDLER_FIELDS if handlers else frozenset())
    except ArgumentsInvalid as exc:
        errors += exc.errors
    raw = arguments.get(HANDLER_ARG, handler) if handlers else None
    if raw is not None:
        try:
            shaped = ResultHandler.model_validate(raw).model_dump(mode="json")
        except ValidationError as exc:
            errors += [_handler_error(e) for e in exc.errors()]
    if errors or valid is None:
        raise ArgumentsInvalid(spec.name, errors)
    return CallPlan(spec, valid, shaped, needed_for(spec, valid.args))


def _handler_error(error: Any) -> FieldError:
    loc = ".".join(str(part) for part in (HANDLER_ARG, *error["loc"]))
    reason = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
    return FieldError(loc, reason, error.get("input"))
