"""Hermes / Qwen2.5 / Qwen3 JSON in tags: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.

The JSON is read to its real end (a `</tool_call>` inside a string argument is part of the string);
the closing tag is optional, as engines accept a complete object without it. A fence around the JSON
and several objects in one tag are tolerated.
"""

from workers.llm.formats.base import Block, clip, json_calls, malformed, skip_fence, skip_ws, truncated

CLOSE = "</tool_call>"


def json_block(text: str, pos: int) -> Block:
    """The JSON call object(s) starting at `pos` (just past `<tool_call>`), up to the closing tag."""
    at = skip_ws(text, skip_fence(text, pos))
    if at < len(text) and text[at] in "{[":
        return json_calls(text, at, "<tool_call>", "```", CLOSE)
    if at >= len(text):
        return Block(len(text), errors=[truncated("<tool_call>")])
    close = text.find(CLOSE, at)
    resume = close + len(CLOSE) if close != -1 else len(text)
    return Block(resume, errors=[malformed(f"a <tool_call> must hold a JSON object, not {clip(text[at:resume])!r}")])
