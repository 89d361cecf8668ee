"""DeepSeek V3.2 / V4 DSML markup:

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true">text</｜DSML｜parameter>
    <｜DSML｜parameter name="KEY" string="false">JSON</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

`string="true"` values are the exact text; `string="false"` values are JSON; without the attribute the
tool's schema decides. An invoke may hold one JSON object instead of parameters. The same markup
without the `｜DSML｜` prefix (`<function_calls><invoke name=…>`) is read too.
"""

import json
import re

from pydantic import JsonValue

from workers.llm.formats.base import (
    Block,
    Parsed,
    RawCall,
    ValueMarkup,
    cut_at,
    json_end,
    malformed,
    scan_sections,
    skip_marker,
    skip_ws,
    truncated,
    value_end,
)

START = re.compile(r"<(?P<prefix>[｜|]DSML[｜|])?invoke\s+name=\"(?P<name>[^\"]*)\"\s*>")
_PARAM = re.compile(r"<(?:[｜|]DSML[｜|])?parameter\s+name=\"(?P<key>[^\"]*)\"(?:\s+string=\"(?P<string>\w+)\")?\s*>")
_SECTIONS = re.compile(r"</?(?:[｜|]DSML[｜|])?(?:function_calls|tool_calls)>")
_WHAT = "DSML"


def parse(text: str) -> Parsed:
    """Every `invoke` in `text`; the `function_calls` wrappers are dropped from the content."""
    return scan_sections(text, START, _block, "deepseek_dsml", opened=_SECTIONS, markers=_SECTIONS, what=_WHAT)


def _block(text: str, match: re.Match[str]) -> Block:
    prefix, name = match["prefix"] or "", match["name"]
    close = f"</{prefix}invoke>"
    at = skip_ws(text, match.end())
    if text.startswith("{", at):
        end = json_end(text, at)
        if end is None:
            return Block(len(text), errors=[truncated(_WHAT, name)])
        return Block(skip_marker(text, end, close), [RawCall(name, text[at:end])])
    return _parameters(text, match.end(), name, prefix)


def _parameters(text: str, pos: int, name: str, prefix: str) -> Block:
    close = f"</{prefix}invoke>"
    markup = ValueMarkup(
        f"</{prefix}parameter>",
        (f"<{prefix}parameter", close),
        opens=re.compile(re.escape(f"<{prefix}parameter ")),
        ends=re.compile(re.escape(close)),
        restarts=re.compile(re.escape(f"<{prefix}invoke ")),
    )
    args: dict[str, JsonValue] = {}
    textual: set[str] = set()
    while True:
        at = skip_ws(text, pos)
        if text.startswith(close, at):
            return Block(at + len(close), [RawCall(name, args, frozenset(textual))])
        param = _PARAM.match(text, at)
        if param is None:
            if cut_at(text, at, f"<{prefix}parameter", close):
                return Block(len(text), errors=[truncated(_WHAT, name)])
            return Block(at, errors=[malformed(f"unexpected text in the invoke of {name!r}: {text[at : at + 40]!r}")])
        stop, pos = value_end(text, param.end(), markup)
        if stop == -1:
            return Block(len(text), errors=[truncated(_WHAT, name)])
        key, raw = param["key"], text[param.end() : stop]
        args[key] = _value(raw, param["string"], key, textual)


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
