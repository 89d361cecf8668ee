"""Llama 3.1/3.2 `<|python_tag|>`: JSON calls (`{"name", "parameters"}`, several joined by `;`) or Python
call syntax (`brave_search.call(query="…")`, `f(a=1)`), up to `<|eom_id|>` / `<|eot_id|>`.

Plain Llama JSON without the tag is read by the JSON scan; the bracketed Python list by `pythonic`.
"""

import re

from workers.llm.formats.base import (
    NAME,
    Block,
    Parsed,
    cut_at,
    json_calls,
    malformed,
    scan_blocks,
    skip_marker,
    skip_ws,
    truncated,
)
from workers.llm.formats.pythonic import bracket_end, python_calls

START = re.compile(r"<\|python_tag\|>")
_CALL_HEAD = re.compile(rf"{NAME}\s*\(")
_WHAT = "<|python_tag|>"
_ENDS = ("<|eom_id|>", "<|eot_id|>")


def parse(text: str) -> Parsed:
    """Every `<|python_tag|>` call in `text`."""
    return scan_blocks(text, START, _block, "llama_python_tag")


def _block(text: str, match: re.Match[str]) -> Block:
    at = skip_ws(text, match.end())
    if at < len(text) and text[at] in "{[":
        return json_calls(text, at, _WHAT, ";", _ENDS)
    head = _CALL_HEAD.match(text, at)
    if head is None:
        if cut_at(text, at):
            return Block(len(text), errors=[truncated(_WHAT)])
        return Block(at, errors=[malformed(f"<|python_tag|> must be followed by a call, not {text[at : at + 40]!r}")])
    end = bracket_end(text, head.end() - 1)
    if end is None:
        return Block(len(text), errors=[truncated(_WHAT)])
    try:
        calls = python_calls(text[at:end])
    except (SyntaxError, ValueError) as exc:
        return Block(end, errors=[malformed(f"<|python_tag|> call is not valid Python call syntax: {exc}")])
    return Block(skip_marker(text, end, *_ENDS), calls)
