"""Qwen3-Coder XML: whitespace-exact values, end tags inside values, tolerated missing closers, schema types."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds


def xml(*params: tuple[str, str], name: str = "write_file") -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def test_only_the_newline_after_the_opening_and_before_the_closing_tag_is_markup() -> None:
    content = "\n  #include <stdio.h>\n\n\tint x;  \n\n"
    assert calls(xml(("path", "a.c"), ("content", content))) == [("write_file", {"path": "a.c", "content": content})]


def test_end_tags_written_inside_a_value_stay_in_it() -> None:
    content = "close with </parameter> then\n</function>\nand </tool_call>"
    assert calls(xml(("path", "a"), ("content", content))) == [("write_file", {"path": "a", "content": content})]


def test_a_parameter_left_open_is_closed_by_the_next_one_or_by_the_function_end() -> None:
    text = "<function=raster_info><parameter=uri>a.tif<parameter=band>2</function>"
    assert calls(text) == [("raster_info", {"uri": "a.tif", "band": 2})]


def test_a_missing_function_end_before_the_next_call_does_not_swallow_it() -> None:
    first = "<tool_call>\n<function=raster_info>\n<parameter=uri>\na.tif\n</function>\n</tool_call>\n"
    second = "<tool_call>\n<function=raster_info>\n<parameter=uri>\nb.tif\n</parameter>\n</function>\n</tool_call>"
    assert calls(first + second) == [("raster_info", {"uri": "a.tif"}), ("raster_info", {"uri": "b.tif"})]


def test_values_are_typed_by_the_schema_then_validated() -> None:
    text = xml(("uri", "p.gpkg"), ("layer", "3"), ("distance", "1e2"), ("segments", "3"), name="vector_buffer")
    assert calls(text) == [("vector_buffer", {"uri": "p.gpkg", "layer": "3", "distance": 100.0, "segments": 3})]
    wrong = extract(xml(("uri", "p.gpkg"), ("distance", "far"), name="vector_buffer"))
    assert [(e.kind, e.field) for e in wrong.errors] == [("wrong_type", "distance")]


def test_enum_behind_a_ref_and_python_style_objects_are_typed() -> None:
    text = xml(("uri", "a"), ("dst_crs", "EPSG:3857"), ("resampling", "cubic"), ("options", "{'tiled': True}"))
    expected = {"uri": "a", "dst_crs": "EPSG:3857", "resampling": "cubic", "options": {"tiled": True}}
    assert calls(text.replace("write_file", "raster_reproject")) == [("raster_reproject", expected)]


def test_llama_function_tag_with_a_json_body() -> None:
    found = extract('<function=raster_info>{"uri": "a.tif", "band": 1}</function>')
    assert found.format == "llama3_function" and [c.params for c in found.calls] == [{"uri": "a.tif", "band": 1}]


def test_cut_off_and_malformed_functions_yield_errors_only() -> None:
    assert kinds("<tool_call>\n<function=raster_info>\n<parameter=uri>\na.t") == ["truncated"]
    assert kinds("<tool_call>\n<function=raster_info>\n<parameter=uri") == ["truncated"]
    assert kinds("<tool_call>\n<function=raster_info>\n<parameter=uri>\na\n</parameter>\n</func") == ["truncated"]
    assert kinds("<function=raster_info>\nuri: a.tif\n</function>") == ["invalid_markup"]


def test_tags_written_as_text_inside_a_value_stay_in_it() -> None:
    for content in (
        "write <parameter=name>value</parameter> per argument",
        "end the call with </function>\nthen </tool_call>",
        "a </parameter> that text follows",
        "<function=f>\n<parameter=a>\n1\n</parameter>\n</function>",
    ):
        assert calls(xml(("path", "p"), ("content", content))) == [("write_file", {"path": "p", "content": content})]


def test_null_is_json_null_where_the_schema_allows_null_and_text_elsewhere() -> None:
    text = xml(("query", "null"), ("collection", "null"), name="search_catalog")
    assert calls(text) == [("search_catalog", {"query": "null", "collection": None})]
