"""Type the values that arrived as text by the tool's JSON Schema, before validation.

Formats like Qwen3-Coder's `<parameter=…>`, GLM's `<arg_value>` and DSML without `string="true"` carry
every value as text: the schema decides that `3` is an integer for one parameter and the string `"3"` for
another. Strings stay exactly as written; a text that does not convert stays text, so validation reports
the wrong type by name instead of the host guessing. The one literal a string may not keep is `null` for a
property that also allows null: templates render None as `null`, and engines read it back as null.
"""

import ast
import json
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import JsonValue

_INTEGER = re.compile(r"[-+]?\d+")
_MAX_REF_DEPTH = 16


class _NoValue:
    """A conversion that did not apply."""


_NO = _NoValue()


def coerce_params(schema: dict[str, Any], params: dict[str, JsonValue], textual: Iterable[str]) -> dict[str, JsonValue]:
    """`params` with every `textual` argument still held as text converted to its property's type."""
    properties = schema.get("properties") or {}
    out = dict(params)
    for key in textual:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = coerce_text(value, properties.get(key), schema)
    return out


def coerce_text(text: str, prop: Any, root: dict[str, Any]) -> JsonValue:
    """`text` as the value `prop` (a property schema, `$ref`s resolved against `root`) asks for."""
    prop = _resolve(prop, root)
    if not isinstance(prop, dict) or not prop:
        return _guess(text)
    allowed = _allowed_values(prop, root)
    if allowed:
        return next((v for v in allowed if _render(v) in (text, text.strip())), text)
    kinds = _types(prop, root, 0)
    if not kinds:
        return _guess(text)
    if "string" in kinds:
        return None if "null" in kinds and text.strip() == "null" else text  # Qwen3-Coder's null, as engines read it
    for kind, convert in _CONVERTERS:
        if kind in kinds and (value := convert(text.strip())) is not _NO:
            return value  # type: ignore[return-value]
    return text


def _resolve(prop: Any, root: dict[str, Any], depth: int = 0) -> Any:
    while isinstance(prop, dict) and isinstance(prop.get("$ref"), str) and depth < _MAX_REF_DEPTH:
        ref: str = prop["$ref"]
        if not ref.startswith("#/"):
            return {}
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        prop, depth = target, depth + 1
    return prop


def _members(prop: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    found = [_resolve(m, root) for key in ("anyOf", "oneOf", "allOf") for m in prop.get(key) or []]
    return [m for m in found if isinstance(m, dict)]


def _types(prop: dict[str, Any], root: dict[str, Any], depth: int) -> set[str]:
    declared = prop.get("type")
    kinds = {declared} if isinstance(declared, str) else set(declared or [])
    if depth < _MAX_REF_DEPTH:
        for member in _members(prop, root):
            kinds |= _types(member, root, depth + 1)
    if "integer" in kinds:
        kinds.add("number")
    return kinds


def _allowed_values(prop: dict[str, Any], root: dict[str, Any]) -> list[JsonValue]:
    values: list[JsonValue] = list(prop.get("enum") or [])
    if "const" in prop:
        values.append(prop["const"])
    for member in _members(prop, root):
        values += member.get("enum") or []
        if "const" in member:
            values.append(member["const"])
    return values


def _render(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _guess(text: str) -> JsonValue:
    """No schema to go by: JSON when the whole text is JSON (numbers, lists, objects), else the text."""
    try:
        value: JsonValue = json.loads(text)
    except ValueError:
        return text
    return value


def _boolean(text: str) -> JsonValue | _NoValue:
    lowered = text.lower()
    return lowered == "true" if lowered in ("true", "false") else _NO


def _null(text: str) -> JsonValue | _NoValue:
    return None if text.lower() in ("null", "none") else _NO


def _integer(text: str) -> JsonValue | _NoValue:
    return int(text) if _INTEGER.fullmatch(text) else _NO


def _number(text: str) -> JsonValue | _NoValue:
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        value = float(text)
    except ValueError:
        return _NO
    return value if math.isfinite(value) else _NO


def _container(kind: type) -> Callable[[str], JsonValue | _NoValue]:
    def convert(text: str) -> JsonValue | _NoValue:
        for load in (json.loads, ast.literal_eval):
            try:
                value = _plain(load(text))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, kind):
                return value
        return _NO

    return convert


def _plain(value: Any) -> JsonValue:
    """A Python literal as JSON values (tuples become lists); anything JSON cannot hold is refused."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    raise TypeError(f"{type(value).__name__} is not JSON")


_CONVERTERS: tuple[tuple[str, Callable[[str], JsonValue | _NoValue]], ...] = (
    ("boolean", _boolean),
    ("null", _null),
    ("integer", _integer),
    ("number", _number),
    ("object", _container(dict)),
    ("array", _container(list)),
)
"""Tried in this order for a text whose property does not allow strings."""
