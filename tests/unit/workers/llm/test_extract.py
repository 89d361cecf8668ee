"""The pure extractor: shapes, raw formats, repair, truncation, validation, aliases (issue 7 item 2)."""

import pytest

from tests.unit.workers.llm.samples import TOOLS
from workers.llm import extract_calls
from workers.llm.scanner import scan_objects

CALL = '{"tool": "raster_info", "params": {"uri": "a.tif"}}'


def calls(text: str) -> list[tuple[str, dict[str, object]]]:
    found = extract_calls(text, TOOLS)
    assert found.errors == [], found.errors
    return [(c.tool, c.params) for c in found.calls]


def kinds(text: str) -> list[str]:
    found = extract_calls(text, TOOLS)
    assert found.calls == []
    return [e.kind for e in found.errors]


@pytest.mark.parametrize(
    "text",
    [
        CALL,
        f"Sure, I'll check.\n{CALL}\nThen I will answer.",
        f"```json\n{CALL}\n```",
        '{"params": {"uri": "a.tif"}, "tool": "raster_info"}',
        '{"name": "raster_info", "arguments": {"uri": "a.tif"}}',
        '{"name": "raster_info", "arguments": "{\\"uri\\": \\"a.tif\\"}"}',
        '{"name": "raster_info", "parameters": {"uri": "a.tif"}}',
        '{"type": "function", "function": {"name": "raster_info", "arguments": "{\\"uri\\":\\"a.tif\\"}"}}',
        '{"tool_calls": [{"function": {"name": "raster_info", "arguments": {"uri": "a.tif"}}}]}',
        '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "a.tif"}}\n</tool_call>',
        '<|python_tag|>{"name": "raster_info", "parameters": {"uri": "a.tif"}}<|eom_id|>',
        '<|python_tag|>raster_info.call(uri="a.tif")',
        '[TOOL_CALLS] [{"name": "raster_info", "arguments": {"uri": "a.tif"}}]',
        '[TOOL_CALLS]raster_info[ARGS]{"uri": "a.tif"}',
        "<tool_call>\n<function=raster_info>\n<parameter=uri>\na.tif\n</parameter>\n</function>\n</tool_call>",
        '<function=raster_info>{"uri": "a.tif"}</function>',
        "<tool_call>raster_info\n<arg_key>uri</arg_key>\n<arg_value>a.tif</arg_value>\n</tool_call>",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>raster_info\n```json\n"
        '{"uri": "a.tif"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        '<｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{"uri": "a.tif"}<｜tool▁call▁end｜>',
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.raster_info:0<|tool_call_argument_begin|>"
        '{"uri": "a.tif"}<|tool_call_end|><|tool_calls_section_end|>',
        '<|start|>assistant<|channel|>commentary to=functions.raster_info <|constrain|>json<|message|>{"uri":"a.tif"}'
        "<|call|>",
    ],
    ids=lambda t: t[:40],
)
def test_every_supported_shape_and_format_yields_the_call(text: str) -> None:
    assert calls(text) == [("raster_info", {"uri": "a.tif"})]


def test_several_calls_in_one_reply_come_back_in_order() -> None:
    text = f'First {CALL} and then {{"tool": "raster_info", "params": {{"uri": "b.tif", "band": 2}}}}.'
    assert calls(text) == [("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif", "band": 2})]


def test_nested_params_and_braces_inside_strings_do_not_confuse_the_scanner() -> None:
    """The seed's Rust host (mcp-host) found calls with a regex that broke on nested params."""
    text = (
        'x {"tool": "raster_reproject", "params": {"uri": "a}{b.tif", "dst_crs": "EPSG:3857", '
        '"options": {"tiled": true}}} y'
    )
    assert calls(text) == [
        ("raster_reproject", {"uri": "a}{b.tif", "dst_crs": "EPSG:3857", "options": {"tiled": True}})
    ]


def test_empty_params_are_accepted_when_the_schema_allows_them() -> None:
    tools = [{"name": "ping", "inputSchema": {"type": "object", "properties": {}}}]
    found = extract_calls('{"tool": "ping", "params": {}}', tools)
    assert [(c.tool, c.params) for c in found.calls] == [("ping", {})]


def test_an_echoed_call_is_counted_once() -> None:
    assert len(calls(f"I will call {CALL}\n\n{CALL}")) == 1


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "raster_info", "params": {"uri": "a.tif"',
        'Calling {"name": "raster_info", "arguments": {"name": "raster_info"}',
        "<function=raster_info><parameter=uri>a.tif</parameter>",
        '<tool_call>{"name": "raster_info", "arguments": "{\\"uri\\": \\"a.t',
    ],
)
def test_truncated_output_never_yields_a_call(text: str) -> None:
    assert kinds(text) == ["truncated"]


def test_near_json_is_repaired_and_marked() -> None:
    found = extract_calls("{'tool': 'raster_info', 'params': {'uri': 'a.tif',}}", TOOLS)
    assert [(c.params, c.repaired) for c in found.calls] == [({"uri": "a.tif"}, True)]


def test_unknown_tool_suggests_the_closest_name() -> None:
    found = extract_calls('{"tool": "rasterinfo", "params": {"uri": "a.tif"}}', TOOLS)
    assert [(e.kind, e.suggestion) for e in found.errors] == [("unknown_tool", "raster_info")]


def test_blocked_tools_are_refused_even_when_defined() -> None:
    found = extract_calls('{"tool": "workspace_delete", "params": {"uri": "a"}}', TOOLS, blocked=["*_delete"])
    assert [e.kind for e in found.errors] == ["blocked_tool"] and found.calls == []


def test_aliases_and_case_variants_are_renamed_and_reported() -> None:
    found = extract_calls('{"tool": "raster_reproject", "params": {"file": "a.tif", "dstCrs": "EPSG:4326"}}', TOOLS)
    assert found.calls[0].params == {"uri": "a.tif", "dst_crs": "EPSG:4326"}
    assert found.calls[0].aliases == {"file": "uri", "dstCrs": "dst_crs"}


def test_an_alias_never_overrides_the_canonical_name() -> None:
    found = extract_calls('{"tool": "raster_info", "params": {"uri": "a.tif", "path": "b.tif"}}', TOOLS)
    assert [(e.kind, e.field) for e in found.errors] == [("unknown_param", "path")]


@pytest.mark.parametrize(
    ("params", "kind", "field"),
    [
        ("{}", "missing_param", "uri"),
        ('{"uri": "a", "bnd": 1}', "unknown_param", "bnd"),
        ('{"uri": "a", "band": "2"}', "wrong_type", "band"),
        ('{"uri": "a", "band": 0}', "invalid_params", "band"),
        ("[1, 2]", "invalid_arguments", "params"),
    ],
)
def test_argument_errors_name_the_field(params: str, kind: str, field: str) -> None:
    found = extract_calls(f'{{"tool": "raster_info", "params": {params}}}', TOOLS)
    assert [(e.kind, e.field) for e in found.errors] == [(kind, field)]


def test_every_schema_error_is_listed() -> None:
    found = extract_calls('{"tool": "raster_reproject", "params": {"resampling": "fast", "dst_crs": "4326"}}', TOOLS)
    assert sorted(e.kind for e in found.errors) == ["invalid_params", "invalid_value", "missing_param"]


def test_prose_and_data_json_are_not_calls() -> None:
    found = extract_calls('The set {1, 2} and {"name": "Bob", "age": 3} and a { stray brace.', TOOLS)
    assert found.calls == [] and found.errors == []


def test_a_malformed_python_tag_call_is_reported() -> None:
    assert kinds("<|python_tag|>raster_info(uri=open('x'))") == ["invalid_markup"]


def test_scanner_skips_prose_braces_and_finds_later_objects() -> None:
    spans = scan_objects('a {b and {"c": "}"} d')
    assert [s.of('a {b and {"c": "}"} d') for s in spans] == ['{"c": "}"}']
