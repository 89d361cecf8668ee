"""Reading a justification: the four-key shape's field errors, and a model's answer to a justification prompt."""

import json

from pydantic import JsonValue, ValidationError

from schemas.preflight.justification import Justification
from schemas.validation import FieldError


def justification_errors(raw: object, prefix: str) -> list[FieldError]:
    """Field-level problems of a 4-key justification (`[]` when it is valid)."""
    try:
        Justification.model_validate(raw)
    except ValidationError as exc:
        return [
            FieldError(prefix + ".".join(str(p) for p in err["loc"]), err["msg"], err.get("input"))
            for err in exc.errors()
        ]
    return []


def parse_answer(text: str) -> tuple[dict[str, JsonValue] | None, list[str]]:
    """A model's answer to a justification prompt: the JSON object, or what is wrong with it."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, [f"not valid JSON ({exc.msg} at line {exc.lineno})"]
    problems = [f"{e.field}: {e.reason}" for e in justification_errors(value, "")]
    return (value, []) if not problems else (None, problems)
