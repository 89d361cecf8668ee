"""Kimi's newer XTML section syntax:

    <|open|>tools<|sep|>
    <|open|>call tool="NAME" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="number"<|sep|>2<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|>

`type="string"` values are exact text, other types are JSON, and without a type the tool's schema
decides. Attribute values are XML-escaped (`key="q&amp;a"` is the key `q&a`); a value's end is its
`<|close|>argument` followed by the next argument or the call's end, so control-marker text inside a value
stays in it (see `values`). `<|open|>json …<|sep|>{…}<|close|>json<|sep|>` gives all the arguments as one
object. Reasoning (`<|open|>think<|sep|>`) is split off before this parser runs; the response and message
wrappers are dropped from the content.
"""

import html
import json
import re

from pydantic import JsonValue

from workers.llm.formats.base import (
    Block,
    Parsed,
    RawCall,
    cut_at,
    json_end,
    left_open,
    malformed,
    scan_blocks,
    skip_marker,
    skip_ws,
    truncated,
)
from workers.llm.formats.values import ValueMarkup, value_end

START = re.compile(r"<\|open\|>call(?P<attrs>[^<]*?)<\|sep\|>")
_ARG = re.compile(r"<\|open\|>(?P<kind>argument|json)(?P<attrs>[^<]*?)<\|sep\|>")
_ATTR = re.compile(r"(\w+)\s*=\s*\"([^\"]*)\"")
_VALUE = ValueMarkup(
    re.compile(r"<\|close\|>argument"),
    after=re.compile(r"(?:<\|sep\|>\s*)?(?:<\|open\|>(?:argument|json)\b|<\|close\|>call\b|$)"),
    opens=_ARG,
    nests=re.compile(r"<\|open\|>argument\b"),
    ends=re.compile(r"<\|close\|>call\b"),
    restarts=re.compile(r"<\|open\|>call\b[^<]*<\|sep\|>"),
)
_WRAPPERS = re.compile(r"<\|(?:open|close)\|>(?:tools|response|message)(?:\s[^<]*)?<\|sep\|>|<\|end_of_msg\|>")
_TOOLS, _TOOLS_END = re.compile(r"<\|open\|>tools\b"), re.compile(r"<\|close\|>tools\b")
_CLOSE_CALL = "<|close|>call"
_SEP = "<|sep|>"
_WHAT = "XTML"


def parse(text: str) -> Parsed:
    """Every `<|open|>call` in `text`."""
    parsed = scan_blocks(text, START, _block, "kimi_xtml")
    if not parsed.calls and not parsed.errors and (section := _TOOLS.search(text)):
        end = _TOOLS_END.search(text, section.end())
        parsed.errors.append(malformed("an XTML tools section holds no call") if end else truncated(_WHAT))
    elif left_open(text, START, _TOOLS, _TOOLS_END) and not any(e.kind == "truncated" for e in parsed.errors):
        parsed.errors.append(truncated(_WHAT))  # a second tools section cut off before its first call
    parsed.content = _WRAPPERS.sub("", parsed.content)
    return parsed


def _block(text: str, match: re.Match[str]) -> Block:
    attrs = _attrs(match["attrs"])
    name = attrs.get("tool") or attrs.get("name") or ""
    args: dict[str, JsonValue] = {}
    textual: set[str] = set()
    pos = match.end()
    while True:
        at = skip_ws(text, pos)
        if text.startswith(_CLOSE_CALL, at):
            return Block(skip_marker(text, at + len(_CLOSE_CALL), _SEP), [RawCall(name, args, frozenset(textual))])
        part = _ARG.match(text, at)
        if part is None:
            if cut_at(text, at, _SEP, "<|open|>argument", "<|open|>json", _CLOSE_CALL + _SEP):
                return Block(len(text), errors=[truncated(_WHAT, name)])
            return Block(
                at, errors=[malformed(f"XTML: unexpected text in the call to {name!r}: {text[at : at + 40]!r}", name)]
            )
        if part["kind"] == "json":
            return _json_arguments(text, part.end(), name)
        stop, pos = value_end(text, part.end(), _VALUE)
        if stop == -1:
            return Block(len(text), errors=[truncated(_WHAT, name)])
        pos = skip_marker(text, pos, _SEP)
        part_attrs = _attrs(part["attrs"])
        key = part_attrs.get("key") or part_attrs.get("name") or ""
        args[key] = _typed(text[part.end() : stop], part_attrs.get("type"), key, textual)


def _attrs(written: str) -> dict[str, str]:
    return {key: html.unescape(value) for key, value in _ATTR.findall(written)}


def _typed(raw: str, kind: str | None, key: str, textual: set[str]) -> JsonValue:
    if kind == "string":
        return raw
    if kind:
        try:
            value: JsonValue = json.loads(raw)
        except ValueError:
            pass
        else:
            return value
    textual.add(key)
    return raw


def _json_arguments(text: str, pos: int, name: str) -> Block:
    at = skip_ws(text, pos)
    end = json_end(text, at) if text.startswith("{", at) else None
    if end is None:
        close = text.find("<|close|>json", at)
        if close == -1:
            return Block(len(text), errors=[truncated(_WHAT, name)])
        return Block(close, errors=[malformed(f"the json block of {name!r} must hold a JSON object", name)])
    resume = skip_marker(text, skip_marker(text, end, "<|close|>json"), _SEP)
    resume = skip_marker(text, skip_marker(text, resume, _CLOSE_CALL), _SEP)
    return Block(resume, [RawCall(name, text[at:end])])
