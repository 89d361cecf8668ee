"""Extract validated tool calls from a model's reply text: a pure function of the text and the tool definitions."""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import json_repair
from pydantic import JsonValue

from schemas.llm import ErrorKind, ExtractedCall, ExtractionError
from workers.llm.formats import scan_markers
from workers.llm.scanner import looks_like_call, match_object, scan_objects
from workers.llm.shapes import call_shapes
from workers.llm.validation import ToolIndex, build_index, check_call


@dataclass(frozen=True)
class Extraction:
    """Calls that passed validation, and every mistake found, in the order they appear."""

    calls: list[ExtractedCall] = field(default_factory=list)
    errors: list[ExtractionError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing in the reply was wrong."""
        return not self.errors


class _Broken(ValueError):
    """A JSON fragment that cannot be trusted; `kind` says whether it is malformed or cut off."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def extract_calls(text: str, tools: Sequence[dict[str, Any]], *, blocked: Iterable[str] = ()) -> Extraction:
    """Find every tool call in `text` and validate it against the tools' inputSchemas.

    Args:
        text: The model's reply, prose and all.
        tools: MCP tool definitions (`{name, description, inputSchema}`).
        blocked: fnmatch patterns of tools the reply may not call.

    Returns:
        Only calls whose (alias-normalised) arguments validate; everything else becomes an error.
        Truncated output never yields a call.
    """
    return extract_with_index(text, build_index(tools, blocked))


def extract_with_index(text: str, index: ToolIndex) -> Extraction:
    """`extract_calls` with a prebuilt index (the loop builds it once per conversation)."""
    found = _Found(index)
    markers = scan_markers(text)
    for raw in markers.calls:
        found.named(raw.name, raw.arguments)
    found.errors += [ExtractionError(kind="truncated", message=m) for m in markers.truncated]
    found.errors += [ExtractionError(kind="invalid_json", message=m) for m in markers.malformed]
    for span in scan_objects(markers.rest):
        fragment = span.of(markers.rest)
        if span.closed:
            found.fragment(fragment)
        else:
            found.errors.append(_truncated(fragment))
    return Extraction(found.calls, found.errors)


class _Found:
    """Accumulates calls (deduplicated) and errors while one reply is read."""

    def __init__(self, index: ToolIndex) -> None:
        self.index = index
        self.calls: list[ExtractedCall] = []
        self.errors: list[ExtractionError] = []
        self._seen: set[str] = set()

    def fragment(self, fragment: str) -> None:
        try:
            obj, repaired = parse_object(fragment)
        except _Broken as exc:
            if looks_like_call(fragment):
                self.errors.append(ExtractionError(kind=exc.kind, message=str(exc)))
            return
        for name, args in call_shapes(obj, self.index.tools) or []:
            self.named(name, args, repaired=repaired)

    def named(self, name: str, args: JsonValue, *, repaired: bool = False) -> None:
        if isinstance(args, str):
            try:
                args, fixed = parse_object(args) if args.strip() else ({}, False)
            except _Broken as exc:
                self.errors.append(ExtractionError(kind=exc.kind, message=str(exc), tool=name, field="params"))
                return
            repaired = repaired or fixed
        self._add(check_call(self.index, name, args, repaired=repaired))

    def _add(self, checked: ExtractedCall | list[ExtractionError]) -> None:
        if isinstance(checked, list):
            self.errors += checked
            return
        key = json.dumps([checked.tool, checked.params], sort_keys=True)
        if key not in self._seen:  # models often echo a call ("I will call …") before making it
            self._seen.add(key)
            self.calls.append(checked)


def parse_object(fragment: str) -> tuple[JsonValue, bool]:
    """Parse one JSON value whose braces balance; repair near-JSON only when the object is closed.

    Returns:
        The value, and whether `json-repair` had to fix it.

    Raises:
        _Broken: truncated (braces never close) or unparseable even after repair.
    """
    text = fragment.strip()
    if text.startswith("{"):
        end = match_object(text, 0)
        if end is None:
            raise _Broken("truncated", f"the JSON object was cut off: {_clip(text)}")
        text = text[:end]  # prose after the object is not part of it
    try:
        return json.loads(text), False
    except ValueError as exc:
        error = exc
    repaired = json_repair.loads(text) if text.startswith("{") else None
    if not isinstance(repaired, dict) or not repaired:
        raise _Broken("invalid_json", f"invalid JSON ({error}): {_clip(text)}")
    return repaired, True


def _truncated(fragment: str) -> ExtractionError:
    return ExtractionError(kind="truncated", message=f"the reply ends inside a tool call: {_clip(fragment)}")


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
