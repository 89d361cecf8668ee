"""JMESPath handlers: pick fields from a tool's output in-process (the library evaluates, it never executes code)."""

import json
from typing import Any

import jmespath
from jmespath import exceptions as jmes_errors

from schemas.result_handlers import HandlerError, HandlerLimits
from workers.sandbox.errors import HandlerFailed


def run_jmespath(expression: str, tool_output: Any, limits: HandlerLimits | None = None) -> Any:
    """Evaluate a JMESPath `expression` against `tool_output` and return the JSON value it selects.

    Args:
        expression: one JMESPath expression, e.g. `bands[].{band: band, mean: mean}`.
        tool_output: the tool's output as parsed JSON (or a string for text output).
        limits: only `max_output_bytes` applies.

    Returns:
        The selected value (None when nothing matches, as JMESPath defines).

    Raises:
        HandlerFailed: `handler.syntax_error` (with the column) for a bad expression, `handler.exception`
            for an evaluation error such as a wrong function argument type, `handler.output_too_large`.
    """
    try:
        value = jmespath.compile(expression).search(tool_output)
    except jmes_errors.ParseError as exc:  # lexer and incomplete-expression errors too
        raise HandlerFailed(_syntax_error(exc)) from exc
    except jmes_errors.JMESPathError as exc:
        error = HandlerError(code="handler.exception", message=str(exc), exc_type=type(exc).__name__)
        raise HandlerFailed(error) from exc
    _check_size(value, (limits or HandlerLimits()).max_output_bytes)
    return value


def _syntax_error(exc: jmes_errors.ParseError) -> HandlerError:
    position = getattr(exc, "lex_position", None)
    column = position + 1 if isinstance(position, int) else None
    message = " ".join(str(exc).split())  # jmespath's messages draw a caret over several lines
    kind = type(exc).__name__
    return HandlerError(code="handler.syntax_error", message=message, line=1, column=column, exc_type=kind)


def _check_size(value: Any, limit: int) -> None:
    size = len(json.dumps(value, separators=(",", ":")))
    if size > limit:
        message = f"the result is {size} bytes of JSON; the limit is {limit}"
        raise HandlerFailed(HandlerError(code="handler.output_too_large", message=message))
