"""Property over every family (issue 30): call markup never reads as an empty success.

A family's call, damaged anywhere (cut, a span deleted, another marker or stray text written in), yields a
call or an error whenever the family's call markup is still in the reply's content. The patterns below are
this test's own reading of "markup that is not prose", written from the chat templates, not the parsers'.
"""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.workers.llm.formats.check import extract
from tests.unit.workers.llm.formats.render import RENDERERS
from tests.unit.workers.llm.formats.test_format_properties import CALLS
from workers.llm.formats.reasoning import split_reasoning

_LINE_TAG = r"(?m)^[ \t]*<tool_call>"
MARKUP: dict[str, re.Pattern[str]] = {
    "hermes": re.compile(_LINE_TAG),
    "qwen3_xml": re.compile(rf"{_LINE_TAG}|<function=[^>\n]+>"),
    "glm": re.compile(_LINE_TAG),
    "mistral": re.compile(r"(?m)^[ \t]*\[TOOL_CALLS\]|\[TOOL_CALLS\](?:\S|\s*[\[{]|\s*$)"),
    "mistral_array": re.compile(r"(?m)^[ \t]*\[TOOL_CALLS\]|\[TOOL_CALLS\](?:\S|\s*[\[{]|\s*$)"),
    "pythonic": re.compile(r"(?m)^[ \t]*\[\s*[A-Za-z_][\w.]*\s*\("),
    "llama_python_tag": re.compile(r"<\|python_tag\|>"),
    "deepseek": re.compile(r"<｜tool▁calls?▁begin｜>"),
    "deepseek_dsml": re.compile(r"<[｜|]DSML[｜|]\s*invoke"),
    "kimi": re.compile(r"<\|tool_call(?:s_section)?_begin\|>"),
    "kimi_xtml": re.compile(r"<\|open\|>(?:tools|call)\b"),
    "harmony": re.compile(r"<\|constrain\|>"),
    "gemma": re.compile(r"<\|tool_call>|<start_function_call>"),
}
NOISE = [
    "<tool_call>", "</tool_call>", "<function=raster_info>", "</parameter>", "<arg_key>", "</arg_value>",
    "[TOOL_CALLS]", "[ARGS]", "<|python_tag|>", "<｜tool▁call▁end｜>", "<｜DSML｜ ", "</｜DSML｜invoke>",
    "<|tool_call_end|>", "<|close|>argument", "<|sep|>", "<|message|>", "<|channel|>", "<|call|>", "<|end|>",
    "<tool_call|>", '<|"|>', "{", "}", "[", "]", '"', ">", "/", " ", "\n", "x",
]  # fmt: skip


@st.composite
def damaged(draw: st.DrawFn) -> tuple[str, str]:
    """A family's rendered call with one to three cuts, deletions or insertions."""
    fmt = draw(st.sampled_from(sorted(RENDERERS)))
    text = RENDERERS[fmt](*draw(st.sampled_from(CALLS))).text
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        stop = draw(st.integers(start, min(len(text), start + 12)))
        written = draw(st.sampled_from(NOISE) | st.text(max_size=3))
        text = draw(st.sampled_from([text[:start], text[:start] + text[stop:], text[:start] + written + text[stop:]]))
    return fmt, text


@settings(max_examples=1500, deadline=None)
@given(damaged())
def test_damaged_call_markup_yields_a_call_or_an_error_never_an_empty_success(case: tuple[str, str]) -> None:
    fmt, text = case
    if MARKUP[fmt].search(split_reasoning(text).content) is None:
        return  # the damage removed the markup (or moved it into reasoning): plain text may be an answer
    found = extract(text)
    assert found.calls or found.errors, (fmt, text, found.format, found.content)
