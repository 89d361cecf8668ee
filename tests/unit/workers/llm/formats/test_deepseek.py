"""DeepSeek V3/V3.1 markers and V3.2 DSML."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds
from workers.llm.formats import parse_reply

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"


def test_v3_fenced_and_v31_inline_forms() -> None:
    v3 = (
        f'{B}<｜tool▁call▁begin｜>function<｜tool▁sep｜>raster_info\n```json\n{{"uri": "a"}}\n```<｜tool▁call▁end｜>{E}'
    )
    v31 = f'{B}<｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{{"uri": "a"}}<｜tool▁call▁end｜>{E}'
    assert calls(v3) == calls(v31) == [("raster_info", {"uri": "a"})]


def test_section_markers_are_not_content() -> None:
    parsed = parse_reply(f'Sure.{B}<｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{{"uri": "a"}}<｜tool▁call▁end｜>{E}')
    assert parsed.content == "Sure." and parsed.format == "deepseek"


def test_cut_off_calls() -> None:
    for cut in (B, f"{B}<｜tool▁call▁begin｜>raster_in", f'{B}<｜tool▁call▁begin｜>raster_info<｜tool▁sep｜>{{"u'):
        assert kinds(cut) == ["truncated"], cut
    assert kinds(f"{B}<｜tool▁call▁begin｜>function<｜tool▁sep｜>raster_info\n```js") == ["truncated"]


def dsml(params: str, name: str = "write_file") -> str:
    invoke = f'<｜DSML｜invoke name="{name}">\n{params}</｜DSML｜invoke>'
    return f"<｜DSML｜function_calls>\n{invoke}\n</｜DSML｜function_calls>"


def param(key: str, value: str, string: str | None = "true") -> str:
    flag = f' string="{string}"' if string else ""
    return f'<｜DSML｜parameter name="{key}"{flag}>{value}</｜DSML｜parameter>\n'


def test_dsml_string_flags_decide_the_type() -> None:
    text = dsml(
        param("uri", "p") + param("layer", "3") + param("distance", "2", "false") + param("segments", "4", None),
        "vector_buffer",
    )
    assert calls(text) == [("vector_buffer", {"uri": "p", "layer": "3", "distance": 2, "segments": 4})]


def test_dsml_string_values_are_exact_and_may_hold_end_tags() -> None:
    content = "\n a </｜DSML｜invoke> b \n"
    assert calls(dsml(param("path", "p") + param("content", content))) == [
        ("write_file", {"path": "p", "content": content})
    ]


def test_dsml_without_the_prefix_and_with_a_json_body() -> None:
    plain = (
        '<function_calls>\n<invoke name="raster_info">\n<parameter name="band">2</parameter>\n'
        '<parameter name="uri" string="true">a</parameter>\n</invoke>\n</function_calls>'
    )
    assert calls(plain) == [("raster_info", {"uri": "a", "band": 2})]
    assert calls(dsml('{"uri": "a"}', "raster_info")) == [("raster_info", {"uri": "a"})]
    assert extract(plain).format == "deepseek_dsml"


def test_dsml_cut_off() -> None:
    assert kinds(
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="raster_info">\n<｜DSML｜parameter name="uri" str'
    ) == ["truncated"]
    assert kinds("<｜DSML｜function_calls>\n<｜DSML｜invoke na") == ["truncated"]


def spaced(params: str, name: str = "write_file") -> str:
    invoke = f'<｜DSML｜ invoke name="{name}">\n{params}</｜DSML｜ invoke>'
    return f"<｜DSML｜ calls>\n{invoke}\n</｜DSML｜ calls>"


def spaced_param(key: str, value: str, string: str = "true") -> str:
    return f'<｜DSML｜ parameter name="{key}" string="{string}">{value}</｜DSML｜ parameter>\n'


def test_dsml_with_a_space_after_the_bars_is_read_like_the_plain_tags() -> None:
    text = spaced(spaced_param("uri", "a") + spaced_param("band", "2", "false"), "raster_info")
    found = extract("Reading it.\n\n" + text)
    assert [(c.tool, c.params) for c in found.calls] == [("raster_info", {"uri": "a", "band": 2})]
    assert found.errors == [] and found.content == "Reading it." and found.format == "deepseek_dsml"


def test_dsml_tags_may_mix_the_two_spellings() -> None:
    text = (
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="raster_info">\n'
        '<｜DSML｜parameter name="uri" string="true">a</｜DSML｜ parameter>\n</｜DSML｜invoke>\n</｜DSML｜calls>'
    )
    assert calls(text) == [("raster_info", {"uri": "a"})]


def test_a_self_closing_invoke_is_a_call_without_arguments() -> None:
    for invoke in ('<｜DSML｜invoke name="workspace_summary"/>', '<｜DSML｜ invoke name="workspace_summary" />'):
        assert calls(f"<｜DSML｜tool_calls>\n{invoke}\n</｜DSML｜tool_calls>") == [("workspace_summary", {})]


def test_dsml_markup_that_yields_no_call_is_an_error_naming_the_family() -> None:
    found = extract(
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="raster_info"><uri>a</uri></｜DSML｜ invoke>\n</｜DSML｜ calls>'
    )
    assert found.calls == [] and [e.kind for e in found.errors] == ["invalid_markup"]
    found = extract("<｜DSML｜ calls>\n<｜DSML｜ call raster_info>\n</｜DSML｜ calls>")
    assert found.calls == [] and found.errors != []


def test_dsml_cut_off_in_the_second_invoke_keeps_the_first() -> None:
    first = '<｜DSML｜ invoke name="raster_info">\n' + spaced_param("uri", "a") + "</｜DSML｜ invoke>\n"
    found = extract(f'<｜DSML｜ calls>\n{first}<｜DSML｜ invoke name="raster_info">\n<｜DSML｜ parameter name="uri" st')
    assert [(c.tool, c.params) for c in found.calls] == [("raster_info", {"uri": "a"})]
    assert [e.kind for e in found.errors] == ["truncated"]
