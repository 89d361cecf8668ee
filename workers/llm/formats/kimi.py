"""Kimi K2 section markers:

    <|tool_calls_section_begin|>
    <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{json}<|tool_call_end|>
    <|tool_calls_section_end|>

The id may lack the `functions.` prefix or the `:index`; some K2.5 outputs put a fenced JSON block
after the id instead of `<|tool_call_argument_begin|>`. Arguments end where the JSON does.
"""

import re

from workers.llm.formats.base import Block, Parsed, cut_at, json_arguments, scan_sections, truncated

START = re.compile(r"<\|tool_call_begin\|>")
SECTION_BEGIN = re.compile(r"<\|tool_calls_section_begin\|>")
_SECTION_END = re.compile(r"<\|tool_calls_section_end\|>")
_SECTIONS = re.compile(r"<\|tool_calls_section_(?:begin|end)\|>")
_HEAD = re.compile(r"\s*(?P<id>[^\s<{`]+)\s*(?P<arg><\|tool_call_argument_begin\|>)?")
_INDEX = re.compile(r":\d+$")
_WHAT = "Kimi"


def parse(text: str) -> Parsed:
    """Every `<|tool_call_begin|>` call in `text`; section markers are dropped from the content."""
    return scan_sections(
        text, START, _block, "kimi", opened=SECTION_BEGIN, closed=_SECTION_END, markers=_SECTIONS, what=_WHAT
    )


def tool_name(call_id: str) -> str:
    """`functions.get_weather:0` → `get_weather`."""
    return _INDEX.sub("", call_id.removeprefix("functions."))


def _block(text: str, match: re.Match[str]) -> Block:
    head = _HEAD.match(text, match.end())
    if head is None or (head.end() == len(text) and not head["arg"]):
        return Block(len(text), errors=[truncated(_WHAT)])
    name = tool_name(head["id"])
    if not head["arg"] and cut_at(text, head.end(), "<|tool_call_argument_begin|>"):
        return Block(len(text), errors=[truncated(_WHAT, name)])
    return json_arguments(text, head.end(), _WHAT, name, "<|tool_call_end|>")
