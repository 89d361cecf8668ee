"""The older workflows' `${…}` template syntax (docs/workflows.md), parsed by its grammar and converted to Jinja2."""

from collections.abc import Mapping

import pytest
from pydantic import JsonValue

from workers.workflows.dollar import is_dollar, parse, parse_path
from workers.workflows.template import (
    Missing,
    MissingValue,
    TemplateError,
    TemplateSyntaxError,
    UndefinedVariable,
    format_value,
)


def render(source: str, context: Mapping[str, JsonValue], *, missing: Missing = "error") -> str:
    return parse(source).render(context, missing=missing)


def test_variables_indexes_and_fields_render_from_the_context() -> None:
    context: dict[str, JsonValue] = {
        "name": "dem",
        "items": ["a", "b", "c"],
        "crs": {"code": "EPSG:3035", "why": "equal area"},
    }

    text = render("${name}: ${items[0]}, ${items[-1]}; ${crs.code} (${crs.why})", context)

    assert text == "dem: a, c; EPSG:3035 (equal area)"


def test_chained_accessors_reach_into_nested_values() -> None:
    context: dict[str, JsonValue] = {"runs": [{"bands": [{"stats": {"mean": 1.5}}]}]}

    assert render("${runs[0].bands[0].stats.mean}", context) == "1.5"


def test_foreach_repeats_its_body_per_item_and_binds_the_loop_variable() -> None:
    text = render("${foreach s in steps}[${s.id}]${/foreach}", {"steps": [{"id": "a"}, {"id": "b"}]})

    assert text == "[a][b]"


def test_nested_foreach_sees_the_outer_loop_variable() -> None:
    template = "${foreach g in groups}${g.name}:${foreach m in g.members}${m}@${g.name} ${/foreach};${/foreach}"
    groups: JsonValue = [{"name": "x", "members": ["1", "2"]}, {"name": "y", "members": []}]

    assert render(template, {"groups": groups}) == "x:1@x 2@x ;y:;"


def test_block_tags_alone_on_a_line_leave_no_blank_lines() -> None:
    template = "Review:\n  ${foreach s in steps}\n  - ${s}\n  ${/foreach}\nDone\n"

    assert render(template, {"steps": ["a", "b"]}) == "Review:\n  - a\n  - b\nDone\n"


def test_dollar_dollar_brace_writes_a_literal_and_a_lone_dollar_is_text() -> None:
    assert render("$${x} costs $5 ${x}", {"x": "y"}) == "${x} costs $5 y"


def test_values_format_lists_as_bullets_objects_as_json_and_none_as_nothing() -> None:
    assert format_value(["a", "b"]) == "- a\n- b"
    assert format_value({"b": 1, "a": True}) == '{"a": true, "b": 1}'
    assert format_value(None) == ""
    assert format_value(False) == "false"


def test_an_undefined_variable_is_an_error_with_its_name_and_position() -> None:
    with pytest.raises(UndefinedVariable) as caught:
        render("line one\n  ${missing}", {}, missing="empty")

    assert (caught.value.name, caught.value.line, caught.value.column) == ("missing", 2, 3)
    assert caught.value.code == "template.undefined"


def test_an_undefined_list_in_a_nested_foreach_is_an_error() -> None:
    with pytest.raises(UndefinedVariable) as caught:
        render("${foreach a in outer}${foreach b in inner}${b}${/foreach}${/foreach}", {"outer": [1]})

    assert caught.value.name == "inner"


def test_a_missing_index_or_field_fails_strictly_and_renders_empty_leniently() -> None:
    context: dict[str, JsonValue] = {"items": ["only"], "obj": {"a": 1}}

    with pytest.raises(MissingValue):
        render("${items[3]}", context)
    with pytest.raises(MissingValue):
        render("${obj.b}", context)
    assert render("<${items[3]}><${obj.b}><${items.x}>", context, missing="empty") == "<><><>"


def test_foreach_over_a_non_list_fails_strictly_and_iterates_once_leniently() -> None:
    with pytest.raises(MissingValue):
        render("${foreach x in text}${x}${/foreach}", {"text": "abc"})

    assert render("${foreach x in text}(${x})${/foreach}", {"text": "abc"}, missing="empty") == "(abc)"


@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        ("ok\n${unclosed", 2, 1),
        ("${foreach x in xs}never closed", 1, 1),
        ("a ${/foreach}", 1, 3),
        ("${foreach x xs}${/foreach}", 1, 1),
        ("${foreach x.y in xs}${/foreach}", 1, 1),
        ("${a..b}", 1, 1),
        ("${a[one]}", 1, 1),
        ("${1abc}", 1, 1),
        ("${}", 1, 1),
        ("${a b}", 1, 1),
    ],
)
def test_malformed_templates_fail_to_parse_with_a_position(source: str, line: int, column: int) -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        parse(source)

    assert (caught.value.line, caught.value.column) == (line, column)
    assert isinstance(caught.value, TemplateError)


def test_names_lists_free_variables_and_excludes_loop_variables() -> None:
    template = parse("${a} ${foreach x in b.items}${x.f} ${c[0]}${foreach y in x.sub}${y}${d}${/foreach}${/foreach}")

    assert template.names() == {"a", "b", "c", "d"}


def test_paths_parse_into_a_root_and_accessors() -> None:
    path = parse_path(" analysis.items[0].name[-2] ")

    assert (path.root, path.accessors, str(path)) == (
        "analysis",
        ("items", 0, "name", -2),
        "analysis.items[0].name[-2]",
    )


def test_a_parsed_template_renders_many_times_with_different_contexts() -> None:
    template = parse("${foreach i in xs}${i}${/foreach}")

    lists: list[JsonValue] = [[1, 2], [], ["z"]]

    assert [template.render({"xs": xs}) for xs in lists] == ["12", "", "z"]


def test_the_message_of_an_undefined_variable_names_it_and_where_it_is() -> None:
    with pytest.raises(UndefinedVariable) as caught:
        render("${foreach s in steps}\n  ok ${s} ${ghost.field}\n${/foreach}", {"steps": ["a"]})

    assert str(caught.value) == "undefined variable 'ghost' (line 2, column 11)"


def test_a_loop_variable_shadows_a_context_variable_only_inside_its_loop() -> None:
    template = "${x}|${foreach x in xs}${x}${foreach x in x}<${x}>${/foreach}${/foreach}|${x}"
    context: dict[str, JsonValue] = {"x": "outer", "xs": [["a", "b"], ["c"]]}

    assert render(template, context) == "outer|- a\n- b<a><b>- c<c>|outer"
    assert parse(template).names() == {"x", "xs"}


def test_dollar_escapes_and_jinja_syntax_in_text_are_written_as_they_are() -> None:
    source = "$$${x} {{ x }} {% if x %} {# note #} %} #} }} $ {$} ${foreach i in xs}$${i}${/foreach}"

    assert render(source, {"x": "y", "xs": [1, 2]}) == "$${x} {{ x }} {% if x %} {# note #} %} #} }} $ {$} ${i}${i}"


def test_a_whole_string_variable_renders_as_text_in_the_format_of_the_value() -> None:
    rendered = [render("${v}", {"v": v}) for v in (3, 2.5, False, None, ["a", ["b"]], {"k": [1]}, "")]

    assert rendered == ["3", "2.5", "false", "", "- a\n- - b", '{"k": [1]}', ""]


@pytest.mark.parametrize("name", ["loop", "none", "true", "range", "in", "namespace", "items"])
def test_names_that_jinja_reserves_are_plain_variables(name: str) -> None:
    assert render(f"<${{{name}}}>${{foreach i in {name}}}${{i}}${{/foreach}}", {name: ["v"]}) == "<- v>v"
    with pytest.raises(UndefinedVariable) as caught:
        render(f"${{{name}}}", {})
    assert caught.value.name == name


def test_fields_are_dict_keys_never_python_attributes() -> None:
    class Secret:
        token = "s3cret"

    context: dict[str, JsonValue] = {"d": {"a": 1}, "with_items": {"items": "listed"}}

    for source in ("${d.items}", "${d.__class__}", "${d.keys}", "${d[0]}"):
        with pytest.raises(MissingValue):
            render(source, context)
        assert render(source, context, missing="empty") == ""
    assert render("${with_items.items}", context) == "listed"
    assert render("<${o.token}>", {"o": Secret()}, missing="empty") == "<>"  # type: ignore[dict-item]


def test_line_breaks_and_the_trailing_newline_are_kept_as_written() -> None:
    assert render("a\r\n${x}\r\n\n", {"x": "y"}) == "a\r\ny\r\n\n"
    assert render("${foreach i in xs}\r\n${i}\r\n${/foreach}\r\n", {"xs": [1]}) == "1\r\n"


def test_a_file_is_in_the_dollar_syntax_when_it_has_dollar_tags_and_no_jinja_tag() -> None:
    assert is_dollar(["Problem: ${problem}", "plain"])
    assert not is_dollar(["Problem: {{ problem }}", "costs ${5}"])
    assert not is_dollar(["{% for x in xs %}{% endfor %}"]) and not is_dollar(["plain"])
