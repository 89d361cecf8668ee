"""Extract validated tool calls from a model's reply text: a pure function of the text and the tool definitions."""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import json_repair
from pydantic import JsonValue

from schemas.chat import ErrorKind, ExtractedCall, ExtractionError
from workers.llm.call_shapes import call_shapes
from workers.llm.formats import RawCall, parse_reply
from workers.llm.scanner import looks_like_call, match_object
from workers.llm.validation import ToolIndex, build_index, check_call


@dataclass(frozen=True)
class Extraction:
    """Calls that passed validation, every mistake found, and the reply split as a serving engine would."""

    calls: list[ExtractedCall] = field(default_factory=list)
    errors: list[ExtractionError] = field(default_factory=list)
    format: str = "text"
    """The format the reply's markers revealed (`hermes`, `qwen3_xml`, `harmony`, …), `json` for JSON calls
    found by the fallback scan, `text` when the reply holds no call at all."""
    content: str = ""
    """What the reply says outside its calls and its reasoning (the answer, when there is no call)."""
    reasoning: str = ""
    """The reply's reasoning (`<think>`, `[THINK]`, analysis channel…): never executed, kept for the record."""

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
        text: The model's reply, prose, reasoning, special tokens and all.
        tools: MCP tool definitions (`{name, description, inputSchema}`).
        blocked: fnmatch patterns of tools the reply may not call.

    Returns:
        Only calls whose (alias-normalised, schema-typed) arguments validate; everything else becomes an
        error. A reply cut off inside a call yields the complete calls before it and a `truncated` error for
        the unfinished one (as serving engines return them); cut off inside its reasoning, it yields none.
    """
    return extract_with_index(text, build_index(tools, blocked))


def extract_with_index(text: str, index: ToolIndex) -> Extraction:
    """`extract_calls` with a prebuilt index (the loop builds it once per conversation)."""
    parsed = parse_reply(text)
    found = _Found(index, dedupe=parsed.format == "json")
    found.errors += parsed.errors
    for raw in parsed.calls:
        found.raw(raw)
    fmt = parsed.format
    if fmt == "json" and not found.calls and not found.errors:
        fmt = "text"
    return Extraction(found.calls, found.errors, fmt, parsed.content, parsed.reasoning)


class _Found:
    """Accumulates calls and errors while one reply is read."""

    def __init__(self, index: ToolIndex, *, dedupe: bool) -> None:
        self.index = index
        self.dedupe = dedupe
        """Models often echo a JSON call in prose ("I will call …") before making it: count it once."""
        self.calls: list[ExtractedCall] = []
        self.errors: list[ExtractionError] = []
        self._seen: set[str] = set()

    def raw(self, raw: RawCall) -> None:
        if raw.name is None:
            self.fragment(str(raw.arguments), required=raw.required)
        else:
            self.named(raw.name, raw.arguments, textual=raw.textual)

    def fragment(self, fragment: str, *, required: bool) -> None:
        try:
            obj, repaired = parse_object(fragment)
        except _Broken as exc:
            if required or looks_like_call(fragment):
                self.errors.append(ExtractionError(kind=exc.kind, message=str(exc)))
            return
        shapes = call_shapes(obj, self.index.tools)
        if shapes is None and required:
            self.errors.append(_no_name(fragment))
        for name, args in shapes or []:
            self.named(name, args, repaired=repaired)

    def named(
        self, name: str, args: JsonValue, *, repaired: bool = False, textual: frozenset[str] = frozenset()
    ) -> None:
        if isinstance(args, str):
            try:
                args, fixed = parse_object(args) if args.strip() else ({}, False)
            except _Broken as exc:
                self.errors.append(ExtractionError(kind=exc.kind, message=str(exc), tool=name, field="params"))
                return
            repaired = repaired or fixed
        self._add(check_call(self.index, name, args, repaired=repaired, textual=textual))

    def _add(self, checked: ExtractedCall | list[ExtractionError]) -> None:
        if isinstance(checked, list):
            self.errors += checked
            return
        key = json.dumps([checked.tool, checked.params], sort_keys=True)
        if self.dedupe and key in self._seen:
            return
        self._seen.add(key)
        self.calls.append(checked)


def _no_name(fragment: str) -> ExtractionError:
    return ExtractionError(
        kind="invalid_arguments", message=f'a tool call needs "name" and "arguments": {_clip(fragment)}'
    )


def parse_object(fragment: str) -> tuple[JsonValue, bool]:
    """Parse one JSON value whose braces balance; repair near-JSON only when the object is closed.

    Returns:
        The value, and whether `json-repair` had to fix it.

    Raises:
        _Broken: truncated (braces never close) or unparseable even after repair.
    """
    text = fragment.strip()
    if text.startswith(("{", "[")):
        end = match_object(text, 0)
        if end is None:
            raise _Broken("truncated", f"the JSON was cut off: {_clip(text)}")
        text = text[:end]  # prose after the object is not part of it
    try:
        return json.loads(text), False
    except ValueError as exc:
        error = exc
    repaired = json_repair.loads(text) if text.startswith(("{", "[")) else None
    if not isinstance(repaired, dict | list) or not repaired:
        raise _Broken("invalid_json", f"invalid JSON ({error}): {_clip(text)}")
    return repaired, True


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
