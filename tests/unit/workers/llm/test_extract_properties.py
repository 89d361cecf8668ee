"""Property: for any text, the extractor returns only calls that validate against the tool's schema (issue 7)."""

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.unit.workers.llm.samples import TOOLS
from workers.llm import extract_calls

SCHEMAS = {t["name"]: Draft202012Validator(t["inputSchema"]) for t in TOOLS}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
names = st.sampled_from([*SCHEMAS, "raster-info", "nope", "Raster_Info"])
keys = st.sampled_from(["uri", "band", "dst_crs", "dstCrs", "path", "file", "resampling", "options", "x"])
params = st.dictionaries(keys, json_values | st.sampled_from(["EPSG:4326", "bilinear", 2]), max_size=4)


@st.composite
def call_texts(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["tool", "name", "hermes", "qwen", "mistral", "fn"]))
    name, args = draw(names), draw(params)
    body = {
        "tool": {"tool": name, "params": args},
        "name": {"name": name, "arguments": json.dumps(args)},
        "fn": {"function": {"name": name, "arguments": args}},
    }.get(shape, {"name": name, "arguments": args})
    rendered = json.dumps(body)
    if shape == "hermes":
        rendered = f"<tool_call>{rendered}</tool_call>"
    if shape == "qwen":
        rendered = f"<function={name}>" + "".join(f"<parameter={k}>{v}</parameter>" for k, v in args.items())
    if shape == "mistral":
        rendered = f"[TOOL_CALLS]{name}[ARGS]{json.dumps(args)}"
    cut = draw(st.integers(0, len(rendered)))
    return rendered[:cut] if draw(st.booleans()) else rendered


texts = st.lists(st.text(max_size=30) | call_texts(), max_size=4).map("".join)


def assert_valid(found: Any) -> None:
    for call in found.calls:
        assert call.tool in SCHEMAS
        assert list(SCHEMAS[call.tool].iter_errors(call.params)) == []


@settings(max_examples=400, deadline=None)
@given(texts)
def test_extracted_calls_always_validate(text: str) -> None:
    assert_valid(extract_calls(text, TOOLS))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes_and_never_yields_an_invalid_call(text: str) -> None:
    assert_valid(extract_calls(text, TOOLS))
