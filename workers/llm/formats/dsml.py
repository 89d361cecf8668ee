"""DeepSeek V3.2 / V4 DSML markup:

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true">text</｜DSML｜parameter>
    <｜DSML｜parameter name="KEY" string="false">JSON</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

`string="true"` values are the exact text; `string="false"` values are JSON; without the attribute the
tool's schema decides. An invoke may hold one JSON object instead of parameters, or close itself
(`<｜DSML｜invoke name="NAME"/>`: no arguments). The newest templates write a space after the second bar
(`<｜DSML｜ calls>`, `<｜DSML｜ invoke name=…>`, `</｜DSML｜ parameter>`), V4 names the section `tool_calls`; the
same markup without the `｜DSML｜` prefix (`<function_calls><invoke name=…>`) is read too.
"""

import json
import re
from dataclasses import dataclass

from pydantic import JsonValue

from workers.llm.formats.base import (
    Block,
    Parsed,
    RawCall,
    cut_at,
    json_call,
    malformed,
    scan_sections,
    skip_ws,
    truncated,
)
from workers.llm.formats.values import ValueMarkup, value_end

_BARS = r"[｜|]DSML[｜|]"
START = re.compile(rf"<(?P<prefix>{_BARS}\s*)?invoke\s+name=\"(?P<name>[^\"]*)\"\s*(?P<empty>/)?>")
MARKERS = re.compile(rf"<{_BARS}|<function_calls>|<invoke\s+name=\"")
"""What reveals DSML in a reply (the sniffer's pattern)."""
_SECTION = rf"(?:{_BARS}\s*(?:function_calls|tool_calls|calls)|function_calls|tool_calls)\s*>"
_OPENED, _CLOSED, _SECTIONS = re.compile(f"<{_SECTION}"), re.compile(f"</{_SECTION}"), re.compile(f"</?{_SECTION}")
_ATTR = re.compile(r"(\w+)\s*=\s*\"([^\"]*)\"")
_WHAT = "DSML"


@dataclass(frozen=True)
class _Tags:
    """The tags of the invokes with the `｜DSML｜` prefix (a space after it or not, tag by tag) or without it."""

    param: re.Pattern[str]
    close: re.Pattern[str]
    value: ValueMarkup


def _tags(head: str) -> _Tags:
    param = re.compile(rf"<{head}parameter(?P<attrs>(?:\s+\w+\s*=\s*\"[^\"]*\")*)\s*>")
    close = re.compile(rf"</{head}invoke\s*>")
    value = ValueMarkup(
        re.compile(rf"</{head}parameter\s*>"),
        after=re.compile(rf"<{head}parameter\b|</{head}invoke\s*>"),
        opens=param,
        nests=param,
        ends=close,
        restarts=re.compile(rf"<{head}invoke\s+name="),
    )
    return _Tags(param, close, value)


_PREFIXED, _PLAIN = _tags(rf"{_BARS}\s*"), _tags("")


def parse(text: str) -> Parsed:
    """Every `invoke` in `text`; the `function_calls` / `tool_calls` / `calls` wrappers are dropped from the content."""
    return scan_sections(
        text, START, _block, "deepseek_dsml", opened=_OPENED, closed=_CLOSED, markers=_SECTIONS, what=_WHAT
    )


def _block(text: str, match: re.Match[str]) -> Block:
    name = match["name"]
    if match["empty"]:
        return Block(match.end(), [RawCall(name, {})])
    tags = _PREFIXED if match["prefix"] else _PLAIN
    at = skip_ws(text, match.end())
    if text.startswith("{", at):
        return json_call(text, at, _WHAT, name, tags.close)
    return _parameters(text, match.end(), name, tags, match["prefix"] or "")


def _parameters(text: str, pos: int, name: str, tags: _Tags, prefix: str) -> Block:
    args: dict[str, JsonValue] = {}
    textual: set[str] = set()
    while True:
        at = skip_ws(text, pos)
        if closing := tags.close.match(text, at):
            return Block(closing.end(), [RawCall(name, args, frozenset(textual))])
        param = tags.param.match(text, at)
        if param is None:
            if cut_at(text, at, *_spellings(prefix.strip())):
                return Block(len(text), errors=[truncated(_WHAT, name)])
            return Block(
                at, errors=[malformed(f"DSML: unexpected text in the invoke of {name!r}: {text[at : at + 40]!r}", name)]
            )
        stop, pos = value_end(text, param.end(), tags.value)
        if stop == -1:
            return Block(len(text), errors=[truncated(_WHAT, name)])
        attrs = dict(_ATTR.findall(param["attrs"]))
        key = attrs.get("name", "")
        args[key] = _value(text[param.end() : stop], attrs.get("string"), key, textual)


def _spellings(bars: str) -> tuple[str, ...]:
    """How the next tag inside an invoke may begin, with the invoke's prefix spaced or not."""
    heads = (bars, f"{bars} ") if bars else ("",)
    return tuple(tag for head in heads for tag in (f"<{head}parameter", f"</{head}invoke>"))


def _value(raw: str, string: str | None, key: str, textual: set[str]) -> JsonValue:
    if string == "true":
        return raw
    if string == "false":
        try:
            parsed: JsonValue = json.loads(raw)
        except ValueError:
            pass
        else:
            return parsed
    textual.add(key)
    return raw
