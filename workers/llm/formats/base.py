"""What every format parser returns, and the helpers they share: JSON calls, block scans, end markers, errors."""

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import JsonValue

from schemas.chat import ExtractionError
from workers.llm.scanner import match_object

NAME = r"[A-Za-z_][\w.\-:/]*"
"""A tool name as models write it (`raster_info`, `ns.tool`, `mcp__srv__tool`, `tools.shell-exec`)."""

_WS = re.compile(r"\s*")


@dataclass(frozen=True)
class RawCall:
    """A call as written, before validation.

    `name` None means `arguments` is the JSON text of a whole call object (`{"name", "arguments"}`,
    a list of them…), to be read by its shape. Otherwise `arguments` is a dict, or JSON text still to parse.
    """

    name: str | None
    arguments: JsonValue
    textual: frozenset[str] = frozenset()
    """Argument names whose values arrived as text; the tool's schema decides their type."""
    required: bool = True
    """False for JSON found in prose by the fallback scan: an object that is not a call is data, not a mistake."""


@dataclass
class Parsed:
    """One reply read the way a serving engine would: reasoning, visible content, calls, and what was broken."""

    format: str
    calls: list[RawCall] = field(default_factory=list)
    errors: list[ExtractionError] = field(default_factory=list)
    content: str = ""
    reasoning: str = ""


@dataclass
class Block:
    """What one call block yielded, and the index just past it (its real end)."""

    end: int
    calls: list[RawCall] = field(default_factory=list)
    errors: list[ExtractionError] = field(default_factory=list)

    @property
    def cut(self) -> bool:
        """True when the text ended inside this block."""
        return any(e.kind == "truncated" for e in self.errors)


BlockParser = Callable[[str, re.Match[str]], Block]
"""Parses the block whose start marker `match` found; reads on from `match.end()`."""

Marker = str | tuple[str, ...] | re.Pattern[str]
"""Markup that may follow a call: one string, alternative strings, or a pattern (matched after whitespace)."""


def skip_ws(text: str, pos: int) -> int:
    """The first index at or after `pos` that is not whitespace."""
    found = _WS.match(text, pos)
    return found.end() if found else pos


def skip_marker(text: str, pos: int, *markers: str) -> int:
    """`pos` moved past whitespace and one of `markers` when the text has it there; else `pos` unchanged."""
    at = skip_ws(text, pos)
    for marker in markers:
        if text.startswith(marker, at):
            return at + len(marker)
    return pos


def json_end(text: str, pos: int) -> int | None:
    """Index just past the JSON object or array starting at `pos` (strings skipped), None if the text ends first."""
    return match_object(text, pos)


def skip_markers(text: str, pos: int, *markers: Marker) -> int:
    """`pos` moved past each of `markers` in turn, and the whitespace before it, where the text has it there."""
    for marker in markers:
        if isinstance(marker, re.Pattern):
            found = marker.match(text, skip_ws(text, pos))
            pos = found.end() if found else pos
        else:
            pos = skip_marker(text, pos, *((marker,) if isinstance(marker, str) else marker))
    return pos


def json_call(text: str, at: int, what: str, name: str | None, *ends: Marker) -> Block:
    """The JSON at `at` as the arguments of `name` (the whole call when `name` is None), read to its real end and
    then past the `ends` that follow it; a truncated `what` call when the text ends inside the JSON."""
    end = json_end(text, at)
    if end is None:
        return Block(len(text), errors=[truncated(what, name)])
    return Block(skip_markers(text, end, *ends), [RawCall(name, text[at:end])])


def json_calls(text: str, at: int, what: str, between: str, *ends: Marker) -> Block:
    """Whole JSON calls one after another from `at` (objects or lists, whitespace and `between` separating them),
    then past the `ends` that follow the last; the calls read so far when the text ends inside one."""
    calls: list[RawCall] = []
    while at < len(text) and text[at] in "{[":
        block = json_call(text, at, what, None)
        if block.cut:
            return Block(block.end, calls, block.errors)
        calls += block.calls
        at = skip_ws(text, skip_marker(text, block.end, between))
    return Block(skip_markers(text, at, *ends), calls)


def json_arguments(text: str, at: int, what: str, name: str, *ends: Marker) -> Block:
    """The JSON object of `name`'s arguments at `at`, a Markdown fence around it allowed, then past the `ends`."""
    at = skip_ws(text, skip_fence(text, at))
    if at >= len(text):
        return Block(len(text), errors=[truncated(what, name)])
    if text[at] != "{":
        return Block(at, errors=[malformed(f"{what}: the arguments of {name!r} must be a JSON object", name)])
    return json_call(text, at, what, name, "```", *ends)


def scan_blocks(text: str, start: re.Pattern[str], parse: BlockParser, fmt: str) -> Parsed:
    """Every block `start` opens, parsed to its real end; text between blocks is content.

    A block cut off by the end of the text ends the scan.
    """
    parsed = Parsed(fmt)
    content: list[str] = []
    pos = 0
    while (match := start.search(text, pos)) is not None:
        content.append(text[pos : match.start()])
        block = parse(text, match)
        if not block.calls and not block.errors:  # the marker was only mentioned
            content.append(match[0])
        parsed.calls += block.calls
        parsed.errors += block.errors
        pos = max(block.end, match.end())
        if block.cut:
            break
    content.append(text[pos:])
    parsed.content = "".join(content)
    return parsed


def scan_sections(
    text: str,
    start: re.Pattern[str],
    parse: BlockParser,
    fmt: str,
    *,
    opened: re.Pattern[str],
    closed: re.Pattern[str],
    markers: re.Pattern[str],
    what: str,
) -> Parsed:
    """`scan_blocks` for formats that wrap their calls in a section: a section `opened` with no call after it is a
    truncated reply (also after complete calls in an earlier section), and the section `markers` are not content."""
    parsed = scan_blocks(text, start, parse, fmt)
    if not parsed.calls and not parsed.errors and (section := opened.search(text)):
        parsed.errors.append(_empty_section(text, section, closed, what))
    elif left_open(text, start, opened, closed) and not any(e.kind == "truncated" for e in parsed.errors):
        parsed.errors.append(truncated(what))
    parsed.content = markers.sub("", parsed.content)
    return parsed


def _empty_section(text: str, section: re.Match[str], closed: re.Pattern[str], what: str) -> ExtractionError:
    """A section with no call: cut off when it never closes, else broken markup."""
    end = closed.search(text, section.end())
    if end is None:
        return truncated(what)
    return malformed(f"a {what} tool-call section holds no call: {clip(text[section.end() : end.start()])!r}")


def left_open(text: str, start: re.Pattern[str], opened: re.Pattern[str], closed: re.Pattern[str]) -> bool:
    """True when the last section `opened` holds no call `start` and is never `closed`: the reply ended in it."""
    sections = list(opened.finditer(text))
    if not sections:
        return False
    after = sections[-1].end()
    return closed.search(text, after) is None and start.search(text, after) is None


def truncated(what: str, name: str | None = None) -> ExtractionError:
    """The reply ended inside a call: an error for the model, never a guess."""
    to = f" to {name!r}" if name else ""
    return ExtractionError(kind="truncated", message=f"the reply ends inside a {what} call{to}", tool=name or None)


def malformed(message: str, name: str | None = None) -> ExtractionError:
    """The call's markup does not follow its format."""
    return ExtractionError(kind="invalid_markup", message=message, tool=name or None)


def clip(text: str, limit: int = 80) -> str:
    """`text` shortened for an error message."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strip_newline(value: str) -> str:
    """`value` without the one newline markup puts after an opening tag and before a closing tag."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


def cut_at(text: str, pos: int, *markers: str) -> bool:
    """True when the output stopped at `pos` or mid-tag: the rest is empty, the start of one of `markers`,
    or one of them followed by an unfinished tag (no `>` yet)."""
    rest = text[pos:].rstrip()
    return not rest or any(m.startswith(rest) or (rest.startswith(m) and ">" not in rest[len(m) :]) for m in markers)


def in_prose(text: str, pos: int) -> bool:
    """True when words precede `pos` on its line: a marker there is mentioned in a sentence, not written as markup."""
    line_start = text.rfind("\n", 0, pos) + 1
    return bool(text[line_start:pos].strip())


def skip_fence(text: str, pos: int) -> int:
    """`pos` moved past an opening Markdown fence (```` ```json ````) when one starts there."""
    at = skip_ws(text, pos)
    if not text.startswith("```", at):
        return pos
    line_end = text.find("\n", at)
    return len(text) if line_end == -1 else line_end + 1
