"""Recognise the JSON shapes a tool call comes in and turn each into a (name, arguments) pair."""

from typing import Any

from pydantic import JsonValue

ARGUMENT_KEYS = ("params", "parameters", "arguments", "args", "input", "tool_input")
"""Keys models use for a call's arguments, in order of preference."""

NamedCall = tuple[str, JsonValue]


def call_shapes(obj: Any, known: frozenset[str] | set[str] | dict[str, Any]) -> list[NamedCall] | None:
    """The calls a JSON value holds, or None when it is not a tool call at all.

    Accepted: `{"tool", "params"}`, `{"name", "arguments"|"parameters"}` (Llama 3.x, Hermes),
    `{"function": {"name", "arguments"}}` (OpenAI `tool_calls` items), `{"function_call": {...}}`,
    wrappers `{"tool_calls": [...]}` / `{"calls": [...]}`, and lists of any of these. A bare
    `{"name": …}` without arguments counts only when the name is a known tool (`{"name": "Bob"}` is data).
    """
    if isinstance(obj, list):
        return _flatten([call_shapes(item, known) for item in obj])
    if not isinstance(obj, dict):
        return None
    for wrapper in ("tool_calls", "calls"):
        if isinstance(obj.get(wrapper), list):
            return _flatten([call_shapes(item, known) for item in obj[wrapper]])
    for nested in ("function", "function_call"):
        if isinstance(obj.get(nested), dict):
            return call_shapes(obj[nested], known)
    return _single(obj, known)


def _single(obj: dict[str, Any], known: frozenset[str] | set[str] | dict[str, Any]) -> list[NamedCall] | None:
    args_key = next((key for key in ARGUMENT_KEYS if key in obj), None)
    args = obj[args_key] if args_key else None
    for name_key in ("tool", "function", "tool_name"):
        if isinstance(obj.get(name_key), str):
            return [(obj[name_key], args)]
    name = obj.get("name")
    if isinstance(name, str) and (args_key is not None or name in known):
        return [(name, args)]
    return None


def _flatten(groups: list[list[NamedCall] | None]) -> list[NamedCall] | None:
    found = [call for group in groups if group for call in group]
    return found or None
