"""`<tool_call>` blocks: each is read by the family its body belongs to (Hermes JSON, Qwen3-Coder XML, GLM)."""

import re

from workers.llm.formats import glm, hermes, qwen_xml
from workers.llm.formats.base import Block, Parsed, clip, cut_at, in_prose, malformed, scan_blocks, skip_ws, truncated

START = re.compile(r"<tool_call>")


def kind(text: str, pos: int) -> str:
    """Which family the `<tool_call>` body at `pos` is written in."""
    at = skip_ws(text, pos)
    if text.startswith(("{", "[", "```"), at):
        return "hermes"
    if text.startswith("<function=", at):
        return "qwen3_xml"
    return "glm" if glm.looks_like(text, at) else "unknown"


def parse(text: str) -> Parsed:
    """Every `<tool_call>` block in `text`; the format named is the first block's."""
    first = START.search(text)
    fmt = kind(text, first.end()) if first else "hermes"
    return scan_blocks(text, START, _block, "hermes" if fmt == "unknown" else fmt)


def _block(text: str, match: re.Match[str]) -> Block:
    pos = match.end()
    found = kind(text, pos)
    if found == "hermes":
        return hermes.json_block(text, pos)
    if found == "qwen3_xml":
        function = qwen_xml.START.match(text, skip_ws(text, pos))
        if function is None:
            return Block(len(text), errors=[truncated("<tool_call>")])
        return qwen_xml.function_block(text, function.end(), function[1].strip())
    if found == "glm":
        return glm.block(text, pos)
    if cut_at(text, skip_ws(text, pos), "<function=", "{"):
        return Block(len(text), errors=[truncated("<tool_call>")])
    close = text.find(hermes.CLOSE, pos)
    if close == -1 and in_prose(text, match.start()):  # a mention ("wrap it in <tool_call> tags"), not a call
        return Block(pos)
    resume = close + len(hermes.CLOSE) if close != -1 else len(text)
    return Block(resume, errors=[malformed(f"a <tool_call> holds no call: {clip(text[pos:resume])!r}")])
