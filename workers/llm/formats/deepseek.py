"""DeepSeek V3 / R1 and V3.1 markers (fullwidth bars and `▁` as the tokenizer writes them):

- V3/R1: `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + a ```` ```json ```` fence + `<｜tool▁call▁end｜>`
- V3.1:  `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`

inside `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`. Arguments end where the JSON does, so a
`<｜tool▁call▁end｜>` written inside a string stays in it. Plain underscores instead of `▁` are accepted too.
"""

import re

from workers.llm.formats.base import (
    Block,
    Parsed,
    RawCall,
    json_end,
    malformed,
    scan_sections,
    skip_fence,
    skip_marker,
    skip_ws,
    truncated,
)

START = re.compile(r"<｜tool[▁_]call[▁_]begin｜>")
_SEP = re.compile(r"<｜tool[▁_]sep｜>")
_END = re.compile(r"\s*<｜tool[▁_]call[▁_]end｜>")
SECTION_BEGIN = re.compile(r"<｜tool[▁_]calls[▁_]begin｜>")
SECTION_END = re.compile(r"<｜tool[▁_]calls[▁_]end｜>")
SECTIONS = re.compile(r"<｜tool[▁_]calls[▁_](?:begin|end)｜>")
_WHAT = "DeepSeek"


def parse(text: str) -> Parsed:
    """Every DeepSeek V3/V3.1 call in `text`; section markers are dropped from the content."""
    return scan_sections(
        text, START, _block, "deepseek", opened=SECTION_BEGIN, closed=SECTION_END, markers=SECTIONS, what=_WHAT
    )


def _block(text: str, match: re.Match[str]) -> Block:
    sep = _SEP.search(text, match.end())
    following = START.search(text, match.end())
    if sep is None or (following and following.start() < sep.start()):
        return Block(len(text), errors=[truncated(_WHAT)])
    head = text[match.end() : sep.start()].strip()
    at = sep.end()
    if head == "function":  # V3: the name runs to the end of the line, the JSON is fenced below it
        line_end = text.find("\n", at)
        if line_end == -1:
            return Block(len(text), errors=[truncated(_WHAT, text[at:].strip())])
        head, at = text[at:line_end].strip(), line_end
    return _arguments(text, skip_ws(text, skip_fence(text, at)), head)


def _arguments(text: str, at: int, name: str) -> Block:
    if at >= len(text):
        return Block(len(text), errors=[truncated(_WHAT, name)])
    if text[at] != "{":
        return Block(at, errors=[malformed(f"{_WHAT}: the arguments of {name!r} must be a JSON object", name)])
    end = json_end(text, at)
    if end is None:
        return Block(len(text), errors=[truncated(_WHAT, name)])
    resume = skip_marker(text, end, "```")
    closing = _END.match(text, resume)
    return Block(closing.end() if closing else resume, [RawCall(name, text[at:end])])
