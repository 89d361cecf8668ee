"""Check a named call against the MCP tool definitions: known tool, aliases renamed, arguments per inputSchema."""

import difflib
import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from pydantic import JsonValue

from schemas.chat import ErrorKind, ExtractedCall, ExtractionError
from workers.llm.coerce import coerce_params

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_KIND_BY_KEYWORD: dict[str, ErrorKind] = {
    "required": "missing_param",
    "additionalProperties": "unknown_param",
    "unevaluatedProperties": "unknown_param",
    "type": "wrong_type",
    "enum": "invalid_value",
    "const": "invalid_value",
}


@dataclass(frozen=True)
class ToolEntry:
    """One tool ready for validation: its compiled validator, its properties, the aliases it accepts."""

    name: str
    definition: dict[str, Any]
    validator: Validator | None
    properties: frozenset[str]
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolIndex:
    """The tools a reply may call, and the patterns that are blocked whatever the definitions say."""

    tools: dict[str, ToolEntry]
    blocked: tuple[str, ...] = ()

    def is_blocked(self, name: str) -> bool:
        """True when `name` matches a blocked pattern (fnmatch)."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.blocked)

    def closest(self, name: str) -> str | None:
        """The known tool name closest to `name`, for "did you mean"."""
        folded = {_fold(known): known for known in self.tools}
        if _fold(name) in folded:
            return folded[_fold(name)]
        matches = difflib.get_close_matches(name, list(self.tools), n=1, cutoff=0.5)
        return matches[0] if matches else None


def build_index(tools: Sequence[dict[str, Any]], blocked: Iterable[str] = ()) -> ToolIndex:
    """Index MCP tool definitions (`{name, description, inputSchema}`) by name; compiled schemas are cached."""
    entries = {str(tool["name"]): _entry(json.dumps(tool, sort_keys=True)) for tool in tools if _named(tool)}
    return ToolIndex(entries, tuple(blocked))


def _named(tool: object) -> bool:
    return isinstance(tool, dict) and isinstance(tool.get("name"), str)


@lru_cache(maxsize=512)
def _entry(canonical: str) -> ToolEntry:
    tool: dict[str, Any] = json.loads(canonical)
    schema = tool.get("inputSchema") or {"type": "object"}
    if not isinstance(schema, dict):
        return ToolEntry(tool["name"], tool, None, frozenset())
    props = frozenset((schema.get("properties") or {}).keys())
    return ToolEntry(tool["name"], tool, _compile(schema), props, _declared_aliases(tool, schema))


def _compile(schema: dict[str, Any]) -> Validator | None:
    try:
        cls = validators.validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
    except SchemaError:
        return None
    validator: Validator = cls(schema)
    return validator


def _declared_aliases(tool: dict[str, Any], schema: dict[str, Any]) -> dict[str, str]:
    """Aliases from `tool.aliases`, `tool._meta.aliases` (`{alias: canonical}`) and per-property `x-aliases`."""
    aliases: dict[str, str] = {}
    aliases.update(tool.get("aliases") or {})
    aliases.update((tool.get("_meta") or {}).get("aliases") or {})
    for prop, spec in (schema.get("properties") or {}).items():
        for alias in (spec or {}).get("x-aliases", []) if isinstance(spec, dict) else []:
            aliases[alias] = prop
    return aliases


def check_call(
    index: ToolIndex, name: str, params: JsonValue, *, repaired: bool = False, textual: Iterable[str] = ()
) -> ExtractedCall | list[ExtractionError]:
    """Validate one call; the result is a call that passes the tool's inputSchema, or the list of what is wrong.

    Arguments named in `textual` arrived as text (XML and tag formats): after aliases are renamed, the
    tool's schema types them (`coerce.py`), and only then is the call validated.
    """
    entry = index.tools.get(name)
    if index.is_blocked(name):
        return [ExtractionError(kind="blocked_tool", message=f"tool {name!r} is not allowed here", tool=name)]
    if entry is None:
        return [_unknown(index, name)]
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return [_not_an_object(name, params)]
    renamed, aliases = rename_aliases(entry, params)
    if textual:
        schema = entry.definition.get("inputSchema")
        typed = {aliases.get(key, key) for key in textual}
        renamed = coerce_params(schema if isinstance(schema, dict) else {}, renamed, typed)
    errors = schema_errors(entry, renamed)
    if errors:
        return errors
    return ExtractedCall(tool=name, params=renamed, aliases=aliases, repaired=repaired)


def _unknown(index: ToolIndex, name: str) -> ExtractionError:
    guess = index.closest(name)
    hint = f" - did you mean {guess!r}?" if guess else ""
    return ExtractionError(kind="unknown_tool", message=f"unknown tool {name!r}{hint}", tool=name, suggestion=guess)


def _not_an_object(name: str, params: JsonValue) -> ExtractionError:
    shown = type(params).__name__
    return ExtractionError(
        kind="invalid_arguments", message=f"arguments must be a JSON object, got {shown}", tool=name, field="params"
    )


def rename_aliases(entry: ToolEntry, params: dict[str, JsonValue]) -> tuple[dict[str, JsonValue], dict[str, str]]:
    """Rename known aliases and case/separator variants (`dstCrs`, `DST-CRS` → `dst_crs`) to canonical names.

    An alias never overrides a canonical name the call also gives.
    """
    out, used = dict(params), {}
    for key in params:
        canonical = _canonical(entry, key)
        if canonical and canonical != key and canonical not in out:
            out[canonical] = out.pop(key)
            used[key] = canonical
    return out, used


def _canonical(entry: ToolEntry, key: str) -> str | None:
    if key in entry.properties:
        return key
    if key in entry.aliases:
        return entry.aliases[key]
    folded = _fold(key)
    return next((prop for prop in entry.properties if _fold(prop) == folded), None)


def _fold(name: str) -> str:
    return _CAMEL.sub("_", name).lower().replace("-", "_").replace(" ", "_")


def schema_errors(entry: ToolEntry, params: dict[str, JsonValue]) -> list[ExtractionError]:
    """Every jsonschema error for `params`, as field-level extraction errors (path order)."""
    if entry.validator is None:
        return [ExtractionError(kind="invalid_params", message="the tool's inputSchema is invalid", tool=entry.name)]
    found = sorted(entry.validator.iter_errors(params), key=lambda e: [str(p) for p in e.absolute_path])
    return [_field_error(entry, error) for error in found]


def _field_error(entry: ToolEntry, error: ValidationError) -> ExtractionError:
    keyword = str(error.validator)
    kind = _KIND_BY_KEYWORD.get(keyword, "invalid_params")
    path = ".".join(str(part) for part in error.absolute_path)
    field_name, suggestion = path or None, None
    if kind == "missing_param":
        missing = _quoted(error.message)
        field_name = ".".join(p for p in (path, missing) if p) or None
    elif kind == "unknown_param":
        field_name, suggestion = _unknown_param(entry, error)
    elif kind == "invalid_value" and isinstance(error.validator_value, list):
        suggestion = "one of " + ", ".join(json.dumps(v) for v in error.validator_value)
    return ExtractionError(kind=kind, message=error.message, tool=entry.name, field=field_name, suggestion=suggestion)


def _quoted(message: str) -> str:
    match = re.match(r"'([^']*)'", message)
    return match[1] if match else ""


def _unknown_param(entry: ToolEntry, error: ValidationError) -> tuple[str | None, str | None]:
    extras = re.findall(r"'([^']*)'", error.message)
    extra = extras[0] if extras else None
    close = difflib.get_close_matches(extra, sorted(entry.properties), n=1, cutoff=0.5) if extra else []
    return extra, (f"did you mean {close[0]!r}?" if close else None)
