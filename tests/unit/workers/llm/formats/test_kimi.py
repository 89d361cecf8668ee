"""Kimi K2 section markers and the XTML syntax."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds
from workers.llm.formats.kimi import tool_name

SECTION = "<|tool_calls_section_begin|>{}<|tool_calls_section_end|>"


def k2(call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def test_call_ids_name_the_tool() -> None:
    assert [tool_name(i) for i in ("functions.a:0", "a:12", "functions.ns.tool:1", "a")] == ["a", "a", "ns.tool", "a"]


def test_k2_calls_and_markers_inside_arguments() -> None:
    body = k2("functions.write_file:0", '{"path": "p", "content": "<|tool_call_end|><|tool_calls_section_end|>"}')
    assert calls(SECTION.format(body)) == [
        ("write_file", {"path": "p", "content": "<|tool_call_end|><|tool_calls_section_end|>"})
    ]


def test_k25_fenced_arguments_without_the_argument_marker() -> None:
    text = SECTION.format('<|tool_call_begin|>functions.raster_info\n```json\n{"uri": "a"}\n```\n<|tool_call_end|>')
    assert calls(text) == [("raster_info", {"uri": "a"})]


def test_k2_cut_off() -> None:
    for cut in ("<|tool_calls_section_begin|>", "<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_in"):
        assert kinds(cut) == ["truncated"], cut
    assert kinds("<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_info:0<|tool_call_arg") == [
        "truncated"
    ]


def xtml(*args: str, name: str = "raster_info") -> str:
    call = f'<|open|>call tool="{name}" index="1"<|sep|>{"".join(args)}<|close|>call<|sep|>'
    return f"<|open|>tools<|sep|>{call}<|close|>tools<|sep|>"


def arg(key: str, value: str, kind: str | None = "string") -> str:
    typed = f' type="{kind}"' if kind else ""
    return f'<|open|>argument key="{key}"{typed}<|sep|>{value}<|close|>argument<|sep|>'


def test_xtml_types_and_untyped_values_by_schema() -> None:
    text = xtml(arg("uri", "p"), arg("layer", "3", None), arg("distance", "2.5", "number"), name="vector_buffer")
    assert calls(text) == [("vector_buffer", {"uri": "p", "layer": "3", "distance": 2.5})]


def test_xtml_content_is_the_response_and_reasoning_the_think_channel() -> None:
    found = extract(
        "<|open|>think<|sep|>plan<|close|>think<|sep|><|open|>response<|sep|>On it.<|close|>response<|sep|>"
        + xtml(arg("uri", "a"))
        + "<|close|>message<|sep|><|end_of_msg|>"
    )
    assert found.reasoning == "plan" and found.content == "On it." and found.format == "kimi_xtml"
    assert [c.params for c in found.calls] == [{"uri": "a"}]


def test_xtml_cut_off_and_malformed() -> None:
    head = '<|open|>tools<|sep|><|open|>call tool="raster_info" index="1"<|sep|>'
    for cut in ("<|open|>tools<|sep|>", head + '<|open|>argument key="uri"', head + arg("uri", "a")[:-3]):
        assert kinds(cut) == ["truncated"], cut
    assert kinds(head + "uri=a<|close|>call<|sep|>") == ["invalid_markup"]


def test_xtml_control_markers_inside_a_value_stay_in_it() -> None:
    for content in (
        "x<|close|>argument<|sep|> y",
        "end with <|close|>call<|sep|> then",
        '<|open|>argument key="k" type="string"<|sep|>v<|close|>argument<|sep|>',
    ):
        assert calls(xtml(arg("path", "p"), arg("content", content), name="write_file")) == [
            ("write_file", {"path": "p", "content": content})
        ]


def test_xtml_attribute_values_are_unescaped() -> None:
    text = xtml(arg("query", "a"), '<|open|>argument key="coll&amp;ection"<|sep|>x<|close|>argument<|sep|>')
    assert [e.field for e in extract(text.replace("raster_info", "search_catalog")).errors] == ["coll&ection"]
    named = xtml(arg("uri", "a"), name="raster&#95;info")
    assert calls(named) == [("raster_info", {"uri": "a"})]
