"""Qwen3-Coder XML: `<function=NAME><parameter=KEY>VALUE</parameter>…</function>`, usually inside `<tool_call>`.

Every value is text (the tool's schema types it later). Values keep their inner whitespace: only the one
newline after `<parameter=…>` and the one before `</parameter>` are markup. A `</parameter>` counts only
when markup follows it, so a value may contain one; a parameter left open is closed by the next
`<parameter=…>` or by `</function>`, as engines tolerate (an end tag followed by the parameter's own
`</parameter>` in the same call is text in the value, and so is a `<parameter=…>…</parameter>` pair written
inside it; see `values`). Llama 3.1's
`<function=NAME>{json}</function>` is the same tag with a JSON body.
"""

import re

from workers.llm.formats.base import (
    Block,
    Parsed,
    RawCall,
    cut_at,
    json_call,
    malformed,
    scan_blocks,
    skip_marker,
    skip_ws,
    strip_newline,
    truncated,
)
from workers.llm.formats.values import ValueMarkup, value_end

START = re.compile(r"<function=([^>\n]+)>")
_PARAM = re.compile(r"<parameter=([^>\n]+)>")
_VALUE = ValueMarkup(
    re.compile("</parameter>"),
    after=re.compile(r"<parameter=[^>\n]+>|</function>|</tool_call>"),
    opens=_PARAM,
    nests=_PARAM,
    ends=re.compile(r"</function>|</tool_call>"),
    restarts=re.compile(r"<function=[^>\n]+>\s*(?:<parameter=|</function>|\{)|<tool_call>\s*<function="),
)
_ENDS = ("</function>", "</tool_call>")


def parse(text: str) -> Parsed:
    """Every `<function=…>` block in `text` (no `<tool_call>` wrapper)."""
    first = START.search(text)
    fmt = "llama3_function" if first and text[skip_ws(text, first.end()) :].startswith("{") else "qwen3_xml"
    return scan_blocks(text, START, lambda t, m: function_block(t, m.end(), m[1].strip()), fmt)


def function_block(text: str, pos: int, name: str) -> Block:
    """The body of `<function=name>` from `pos`: a JSON object, or parameters up to `</function>`."""
    at = skip_ws(text, pos)
    if text.startswith("{", at):
        return json_call(text, at, "<function=…>", name, "</function>", "</tool_call>")
    args: dict[str, str] = {}
    while True:
        at = skip_ws(text, pos)
        for end in _ENDS:
            if text.startswith(end, at):
                resume = skip_marker(text, at + len(end), "</tool_call>")
                return Block(resume, [RawCall(name, dict(args), frozenset(args))])
        param = _PARAM.match(text, at)
        if param is None:
            return _stray(text, at, name)
        value_stop, pos = value_end(text, param.end(), _VALUE)
        if value_stop == -1:
            return Block(len(text), errors=[truncated("<function=…>", name)])
        args[param[1].strip()] = strip_newline(text[param.end() : value_stop])


def _stray(text: str, at: int, name: str) -> Block:
    """Something that is not a parameter inside a function: cut off mid-tag, or not this format."""
    if cut_at(text, at, "<parameter=", *_ENDS):
        return Block(len(text), errors=[truncated("<function=…>", name)])
    ends = [i + len(end) for end in _ENDS if (i := text.find(end, at)) != -1]
    resume = min(ends) if ends else len(text)
    return Block(resume, errors=[malformed(f"unexpected text inside <function={name}>: {text[at : at + 40]!r}", name)])
