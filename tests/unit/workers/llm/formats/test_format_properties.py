"""Properties over every family's rendering: round trips, cut-off output never yields a call, reasoning never runs."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.workers.llm.formats.check import extract
from tests.unit.workers.llm.formats.render import JSON_CARRIED, RENDERERS

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("raster_info", {"uri": "dem.tif", "band": 2}),
    ("raster_reproject", {"uri": "a b.tif", "dst_crs": "EPSG:3857", "options": {"tiled": True}}),
    ("raster_stats", {"uri": "x.tif", "bands": [1, 2], "approx": False, "percentiles": [2.5, 97]}),
    ("search_catalog", {"query": "rivers, lakes", "limit": None}),
    ("vector_buffer", {"uri": "p.gpkg", "layer": "3", "distance": 2.5, "segments": 3}),
]
MARKERS = [
    "</tool_call>", "<tool_call>", "[TOOL_CALLS]", "[ARGS]", "<|call|>", "<|end|>", "<|message|>", "<|channel|>",
    "<|tool_call_end|>", "<|tool_calls_section_end|>", "<｜tool▁call▁end｜>", "<think>", "</think>", "<channel|>",
    "<tool_call|>", "</function>", "{", "}", "[", "]", '"', "'", "\\", "\n", ",",
]  # fmt: skip
anything = st.lists(st.sampled_from(MARKERS) | st.text(max_size=6), max_size=10).map("".join)
SAFE_IN_MARKUP = {
    "qwen3_xml": ("<parameter=", "</parameter>", "<function=", "<tool_call>"),
    "glm": ("<arg_key>", "</arg_value>", "<tool_call>"),
    "deepseek_dsml": ("<｜DSML｜parameter", "</｜DSML｜parameter>", "<｜DSML｜invoke"),
    "kimi_xtml": ("<|close|>argument", "<|open|>argument", "<|open|>json", "<|open|>call"),
    "gemma": ('<|"|>',),
    "pythonic": (),
}
"""What a text value may not hold in each markup format, besides a reasoning closer (which ends reasoning whose
opener was in the prompt): the next argument's tag, its own closer, or a new call's opener. Anything else, end
tags included, is kept."""
_REASONING_CLOSERS = ("</think>", "[/THINK]", "<channel|>", "<|close|>think<|sep|>")


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
@pytest.mark.parametrize("call", CALLS, ids=lambda c: c[0] if isinstance(c, tuple) else "")
def test_every_family_reads_its_own_rendering(fmt: str, call: tuple[str, dict[str, Any]]) -> None:
    rendered = RENDERERS[fmt](*call)
    found = extract("Let me check that.\n" + rendered.text)
    assert [(c.tool, c.params) for c in found.calls] == [call] and found.errors == []
    assert found.format == fmt.removesuffix("_array")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(RENDERERS)), st.sampled_from(CALLS), st.data())
def test_a_call_cut_off_anywhere_yields_no_call_and_an_error(fmt: str, call: Any, data: st.DataObject) -> None:
    rendered = RENDERERS[fmt](*call)
    cut = data.draw(st.integers(rendered.recognised, rendered.complete - 1))
    found = extract(rendered.text[:cut])
    assert found.calls == []
    assert [e.kind for e in found.errors if e.kind == "truncated"], found.errors


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(JSON_CARRIED), anything)
def test_json_carried_arguments_keep_any_text_markers_included(fmt: str, content: str) -> None:
    call = ("write_file", {"path": "p.txt", "content": content})
    found = extract(RENDERERS[fmt](*call).text)
    assert [(c.tool, c.params) for c in found.calls] == [call], found.errors


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SAFE_IN_MARKUP)), anything)
def test_markup_values_keep_their_text_exactly(fmt: str, content: str) -> None:
    forbidden = SAFE_IN_MARKUP[fmt] + _REASONING_CLOSERS
    if any(marker in "\n" + content for marker in forbidden):
        return
    call = ("write_file", {"path": "p.txt", "content": content})
    found = extract(RENDERERS[fmt](*call).text)
    assert [(c.tool, c.params) for c in found.calls] == [call], found.errors


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(RENDERERS)), st.sampled_from(CALLS), st.text("abc .,\n", max_size=30))
def test_a_call_written_only_in_reasoning_never_comes_out(fmt: str, call: Any, answer: str) -> None:
    rendered = RENDERERS[fmt](*call).text
    for opener, closer in (("<think>", "</think>"), ("[THINK]", "[/THINK]"), ("<|channel>thought\n", "<channel|>")):
        found = extract(f"{opener}I could write {rendered} here.{closer}{answer}")
        assert found.calls == [] and found.reasoning.startswith("I could write")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(RENDERERS)), st.sampled_from(CALLS), st.data(), st.text("abc xyz.\n", max_size=40))
def test_a_call_abandoned_midway_and_followed_by_prose_is_never_run(
    fmt: str, call: Any, data: st.DataObject, prose: str
) -> None:
    rendered = RENDERERS[fmt](*call)
    cut = data.draw(st.integers(rendered.recognised, rendered.complete - 1))
    assert extract(rendered.text[:cut] + prose).calls == []


NESTED_PAIRS = {
    "qwen3_xml": ("<parameter=k>", "</parameter>", "</function>"),
    "glm": ("<arg_key>k</arg_key><arg_value>", "</arg_value>", "</tool_call>"),
    "deepseek_dsml": ('<｜DSML｜parameter name="k" string="true">', "</｜DSML｜parameter>", "</｜DSML｜invoke>"),
    "kimi_xtml": ('<|open|>argument key="k" type="string"<|sep|>', "<|close|>argument<|sep|>", "<|close|>call<|sep|>"),
}
"""Per markup family: a whole argument written as text (opening tag, closer) and the call's end tag."""
words = st.text("ab <>/=\n", max_size=5)


@st.composite
def tagged_values(draw: st.DrawFn, fmt: str) -> str:
    opener, closer, end = NESTED_PAIRS[fmt]
    pieces = st.one_of(words, words.map(lambda w: f"{opener}{w}{closer}"), words.map(lambda w: f"{end} {w}x"))
    return "".join(draw(st.lists(pieces, min_size=1, max_size=5))) + "."


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(NESTED_PAIRS)), st.data())
def test_markup_values_keep_whole_arguments_and_end_tags_written_inside_them(fmt: str, data: st.DataObject) -> None:
    content = data.draw(tagged_values(fmt))
    call = ("write_file", {"path": "p.txt", "content": content})
    found = extract(RENDERERS[fmt](*call).text)
    assert [(c.tool, c.params) for c in found.calls] == [call], found.errors
