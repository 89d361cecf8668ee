"""GLM-4.5 / 4.6 / 4.7: `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>…</tool_call>`.

Values are text, written as the template renders them (strings raw, others as JSON), so a string keeps
its exact characters and the tool's schema types the rest. An `</arg_value>` counts only when markup
follows it, so `<tool_call>`, `</tool_call>` or `<arg_key>` written in a value stay in it; a value left open is
closed by the next `<arg_key>…</arg_key><arg_value>` (see `values`). A JSON object right after the name is
accepted as the arguments.
"""

import re

from workers.llm.formats.base import (
    NAME,
    Block,
    RawCall,
    cut_at,
    json_call,
    malformed,
    skip_ws,
    truncated,
)
from workers.llm.formats.values import ValueMarkup, value_end

CLOSE = "</tool_call>"
NAME_AT = re.compile(rf"\s*({NAME})")
_KEY = r"<arg_key>[^<]*</arg_key>\s*<arg_value>"
_VALUE = ValueMarkup(
    re.compile("</arg_value>"),
    after=re.compile(rf"{_KEY}|</tool_call>"),
    opens=re.compile(_KEY),
    nests=re.compile(r"<arg_value>"),
    ends=re.compile(re.escape(CLOSE)),
    restarts=re.compile(rf"<tool_call>\s*{NAME}\s*(?:{_KEY}|</tool_call>|\{{)"),
)


def looks_like(text: str, pos: int) -> bool:
    """True when a `<tool_call>` body at `pos` starts with a bare tool name (GLM) rather than JSON or XML."""
    found = NAME_AT.match(text, pos)
    if found is None:
        return False
    after = skip_ws(text, found.end())
    return after == len(text) or text.startswith(("<arg_key>", CLOSE, "{"), after) or cut_at(text, after, "<arg_key>")


def block(text: str, pos: int) -> Block:
    """The call from `pos` (just past `<tool_call>`) to its `</tool_call>`."""
    found = NAME_AT.match(text, pos)
    name = found[1] if found else ""
    pos = found.end() if found else pos
    args: dict[str, str] = {}
    while True:
        at = skip_ws(text, pos)
        if text.startswith(CLOSE, at):
            return Block(at + len(CLOSE), [RawCall(name, dict(args), frozenset(args))])
        if text.startswith("{", at) and not args:
            return json_call(text, at, "<tool_call>", name, CLOSE)
        if not text.startswith("<arg_key>", at):
            return _stray(text, at, name)
        step = _pair(text, at + len("<arg_key>"), name)
        if isinstance(step, Block):
            return step
        key, value, pos = step
        args[key] = value


def _pair(text: str, pos: int, name: str) -> tuple[str, str, int] | Block:
    key_end = text.find("</arg_key>", pos)
    if key_end == -1:
        return Block(len(text), errors=[truncated("<tool_call>", name)])
    at = skip_ws(text, key_end + len("</arg_key>"))
    if not text.startswith("<arg_value>", at):
        return _stray(text, at, name)
    start = at + len("<arg_value>")
    stop, resume = value_end(text, start, _VALUE)
    if stop == -1:
        return Block(len(text), errors=[truncated("<tool_call>", name)])
    value = text[start:stop] if resume > stop else text[start:stop].rstrip()  # left open: the newline is markup
    return text[pos:key_end].strip(), value, resume


def _stray(text: str, at: int, name: str) -> Block:
    if cut_at(text, at, "<arg_key>", "<arg_value>", CLOSE):
        return Block(len(text), errors=[truncated("<tool_call>", name)])
    close = text.find(CLOSE, at)
    resume = close + len(CLOSE) if close != -1 else len(text)
    return Block(
        resume, errors=[malformed(f"GLM: unexpected text in the <tool_call> of {name!r}: {text[at : at + 40]!r}", name)]
    )
