"""The published form of a tool: its schemas without what a model never reads, and the parts every tool shares
said once, in the server's instructions.

`tools/list` is read by the client's model on every turn; pydantic's schemas carry a `title` on every property and
a model's docstring on every `$defs` entry, written for developers. Both go; field descriptions, types, bounds and
defaults stay.
"""

import json
from collections.abc import Sequence
from typing import Any

from geogate.settings import Settings
from schemas.tools.limits import RESULT_BYTES, figure
from schemas.tools.toolsets import TOOLSETS

_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "not", "additionalProperties", "if", "then", "else")


_LONG = 1024
"""A string bound at or past this many characters says nothing a model needs (the gateway still checks it)."""


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [{type: T, …}, {type: null}]` as `{type: [T, null], …}`: the same values, said shorter; a `default`
    of null goes (leaving the argument out means it)."""
    out = dict(schema)
    if out.get("default", 0) is None:
        del out["default"]
    branches = out.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches):
        return out
    (other,) = [branch for branch in branches if branch != {"type": "null"}]
    if not isinstance(other.get("type"), str) or set(other) & set(out) - {"anyOf"}:
        return out
    del out["anyOf"]
    return {**other, **out, "type": [other["type"], "null"]}


def compact_schema(schema: dict[str, Any], *, top: bool = True) -> dict[str, Any]:
    """`schema` without generated titles, its root's description (the tool's says it), `$defs` descriptions or
    string bounds past `_LONG`, and nullable fields as type lists."""
    out = {key: value for key, value in schema.items() if not (key == "title" and isinstance(value, str))}
    if isinstance(out.get("maxLength"), int) and out["maxLength"] >= _LONG:
        del out["maxLength"]
    out = _nullable(out)
    if top:
        out.pop("description", None)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {name: compact_schema(sub, top=False) for name, sub in out["properties"].items()}
    if isinstance(out.get("$defs"), dict):
        defs = {name: compact_schema(sub, top=False) for name, sub in out["$defs"].items()}
        out["$defs"] = {name: {k: v for k, v in sub.items() if k != "description"} for name, sub in defs.items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [compact_schema(sub, top=False) if isinstance(sub, dict) else sub for sub in out[key]]
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = compact_schema(out[key], top=False)
    return out


def _types(schema: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """The JSON types a (sub)schema admits, `$ref`s and `anyOf` branches followed; none when it admits any."""
    if "$ref" in schema:
        return _types(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs)
    if "anyOf" in schema:
        found = [_types(branch, defs) for branch in schema["anyOf"]]
        return [] if [] in found else sorted({kind for kinds in found for kind in kinds})
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else list(kind or [])


def shallow_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A result schema as `outputSchema` publishes it: its fields, which are required, and each field's JSON type;
    what is inside a nested object or list is left to the tool reference. Every result valid for `schema` is valid
    for this one."""
    defs = schema.get("$defs", {})
    properties = {}
    for name, sub in schema.get("properties", {}).items():
        kinds = _types(sub, defs)
        properties[name] = {"type": kinds[0] if len(kinds) == 1 else kinds} if kinds else {}
    shallow: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("additionalProperties") is False:
        shallow["additionalProperties"] = False
    if schema.get("required"):
        shallow["required"] = list(schema["required"])
    return shallow


def example_line(examples: Sequence[dict[str, Any]]) -> str:
    """The description's closing line: the first example call's arguments as JSON."""
    if not examples:
        return ""
    return "\nExample: " + json.dumps(examples[0], separators=(",", ":"), ensure_ascii=False)


def instructions(settings: Settings, published: frozenset[str]) -> str:
    """The server's instructions: what every tool shares (paths, result handlers, idempotency, errors, the result
    bound) and the toolsets this server publishes."""
    limit = figure(RESULT_BYTES.setting, settings.limits.model_dump()[RESULT_BYTES.setting])
    shown = ", ".join(name for name in TOOLSETS if name in published)
    return (
        "Geogate runs geospatial (GDAL) jobs durably: every call is recorded in an event log and executed by a "
        "worker. Start with raster_info or vector_info to inspect data.\n"
        "Paths (`uri`, `output`, …) are relative to a workspace root of this server, or absolute inside one; "
        "`output` must not exist unless `overwrite` is true.\n"
        "Every tool also takes an optional `result_handler` {language: python|jmespath, script}: it runs over the "
        "output and only its value comes back, under structuredContent.result (outputSchema then does not apply); "
        "the raw output stays readable at calls://{call_id}/raw.\n"
        "A retry that sends the same `_meta` key io.geogate/idempotency-key attaches to the first call instead of "
        "running again.\n"
        "A failed call answers isError with structuredContent {error: {code, message, errors: [{field, message}]}}; "
        "a tool that needs a justification answers {preflight: {...}} and the prompt to fill it "
        "(persist_justification, then retry).\n"
        f"Bounds of one call: a structured result of at most {limit} of JSON ({RESULT_BYTES.variable}); each tool "
        "states its own bounds. A call past one is refused before work starts, or stopped with nothing written.\n"
        f"Toolsets published here: {shown} (GEOGATE_TOOLSETS)."
    )
