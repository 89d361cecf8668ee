"""Mistral `[TOOL_CALLS]`: a JSON array `[TOOL_CALLS] [{"name", "arguments"}, …]` (tokenizer v3–v7), or
`[TOOL_CALLS]NAME[ARGS]{json}` per call (v11+; v13 adds `[CALL_ID]id` before `[ARGS]`).

Arguments are read to the JSON decoder's end, so `[TOOL_CALLS]` inside a string argument stays in it.
"""

import re

from workers.llm.formats.base import (
    NAME,
    Block,
    Parsed,
    RawCall,
    cut_at,
    in_prose,
    json_end,
    malformed,
    scan_blocks,
    skip_marker,
    skip_ws,
    truncated,
)

START = re.compile(r"\[TOOL_CALLS\]")
_NAMED = re.compile(rf"({NAME})\s*(?:\[CALL_ID\]\s*([^\s\[]*)\s*)?(\[ARGS\])?")
_WHAT = "[TOOL_CALLS]"


def parse(text: str) -> Parsed:
    """Every `[TOOL_CALLS]` block in `text`."""
    return scan_blocks(text, START, _block, "mistral")


def _block(text: str, match: re.Match[str]) -> Block:
    at = skip_ws(text, match.end())
    if at < len(text) and text[at] in "[{":
        end = json_end(text, at)
        if end is None:
            return Block(len(text), errors=[truncated(_WHAT)])
        return Block(skip_marker(text, end, "</s>"), [RawCall(None, text[at:end])])
    if _mentioned(text, match.end()):
        return Block(match.end())
    calls: list[RawCall] = []
    end = at
    while (named := _NAMED.match(text, at)) is not None and (not calls or named[3]):
        step = _named_call(text, named)
        if isinstance(step, Block):
            step.calls[:0] = calls
            return step
        calls.append(step[0])
        end = step[1]
        at = skip_ws(text, end)
    if calls:
        return Block(skip_marker(text, end, "</s>"), calls)
    if cut_at(text, at):
        return Block(len(text), errors=[truncated(_WHAT)])
    return Block(at, errors=[malformed(f"[TOOL_CALLS] must be followed by a call, not {text[at : at + 40]!r}")])


def _named_call(text: str, named: re.Match[str]) -> tuple[RawCall, int] | Block:
    name = named[1]
    at = skip_ws(text, named.end())
    if at < len(text) and text[at] == "{":
        end = json_end(text, at)
        if end is None:
            return Block(len(text), errors=[truncated(_WHAT, name)])
        return RawCall(name, text[at:end]), end
    if cut_at(text, named.end(), "[ARGS]", "[CALL_ID]") or at == len(text):
        return Block(len(text), errors=[truncated(_WHAT, name)])
    return Block(at, errors=[malformed(f"the arguments of {name!r} must be a JSON object after [ARGS]", name)])


def _mentioned(text: str, pos: int) -> bool:
    """`… [TOOL_CALLS] followed by …` in a sentence: a space, then a word that no `[ARGS]`, `[CALL_ID]` or JSON
    follows."""
    if not in_prose(text, pos - len("[TOOL_CALLS]")):
        return False
    named = _NAMED.match(text, skip_ws(text, pos))
    if named is None or not text[pos : pos + 1].isspace() or named[2] is not None or named[3]:
        return False
    after = skip_ws(text, named.end())
    return after < len(text) and text[after] != "{" and not cut_at(text, named.end(), "[ARGS]", "[CALL_ID]")
