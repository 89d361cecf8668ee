"""DeepSeek V3 / R1 and V3.1 markers (fullwidth bars and `▁` as the tokenizer writes them):

- V3/R1: `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + a ```` ```json ```` fence + `<｜tool▁call▁end｜>`
- V3.1:  `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`

inside `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`. Arguments end where the JSON does, so a
`<｜tool▁call▁end｜>` written inside a string stays in it. Plain underscores instead of `▁` are accepted too.
"""

import re

from workers.llm.formats.base import Block, Parsed, json_arguments, scan_sections, truncated

START = re.compile(r"<｜tool[▁_]call[▁_]begin｜>")
_SEP = re.compile(r"<｜tool[▁_]sep｜>")
_END = re.compile(r"<｜tool[▁_]call[▁_]end｜>")
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
    return json_arguments(text, at, _WHAT, head, _END)
