"""Workflow templates in Jinja2 syntax (docs/workflows.md): JSON lookups, values as instructions read them, and
strict or lenient rendering of what is missing."""

import pytest
from pydantic import JsonValue

from workers.workflows.template import MissingValue, TemplateSyntaxError, UndefinedVariable, parse, render


def test_variables_indexes_fields_and_loops_render_from_the_context() -> None:
    context: dict[str, JsonValue] = {"name": "dem", "items": ["a", "b"], "crs": {"code": "EPSG:3035"}}

    text = render(
        "{{ name }}: {{ items[0] }}, {{ items[-1] }}; {{ crs.code }}{% for i in items %} <{{ i }}>{% endfor %}", context
    )

    assert text == "dem: a, b; EPSG:3035 <a> <b>"


def test_values_print_as_bullets_json_and_nothing_for_none() -> None:
    rendered = [render("{{ v }}", {"v": v}) for v in (3, False, None, ["a", ["b"]], {"k": [1]})]

    assert rendered == ["3", "false", "", "- a\n- - b", '{"k": [1]}']


def test_block_tags_alone_on_a_line_leave_no_blank_lines() -> None:
    template = "Review:\n  {% for s in steps %}\n  - {{ s }}\n  {% endfor %}\nDone\n"

    assert render(template, {"steps": ["a", "b"]}) == "Review:\n  - a\n  - b\nDone\n"


def test_an_undefined_variable_is_an_error_with_its_name_and_line() -> None:
    for source in ("line one\n  {{ missing }}", "line one\n{% for x in missing %}{% endfor %}", "\n{{ missing.x }}"):
        with pytest.raises(UndefinedVariable) as caught:
            render(source, {}, missing="empty")

        assert (caught.value.name, caught.value.line, caught.value.code) == ("missing", 2, "template.undefined")


def test_a_missing_index_or_field_fails_strictly_and_renders_empty_leniently() -> None:
    context: dict[str, JsonValue] = {"items": ["only"], "obj": {"a": 1}}

    for source in ("{{ items[3] }}", "{{ obj.b }}", "{% for x in obj.b %}x{% endfor %}"):
        with pytest.raises(MissingValue):
            render(source, context)
    assert (
        render("<{{ items[3] }}><{{ obj.b }}><{% for x in obj.b %}x{% endfor %}>", context, missing="empty") == "<><><>"
    )


def test_fields_are_dict_keys_never_python_attributes() -> None:
    context: dict[str, JsonValue] = {"d": {"a": 1}, "with_items": {"items": "listed"}}

    for source in ("{{ d.items }}", "{{ d.__class__ }}", "{{ d.keys }}", "{{ d[0] }}"):
        with pytest.raises(MissingValue):
            render(source, context)
    assert render("{{ with_items.items }}", context) == "listed"


def test_names_lists_free_variables_and_excludes_loop_variables() -> None:
    template = parse("{{ a }}{% for x in b.items %}{{ x.f }} {{ c[0] }}{{ loop.index }}{% endfor %}")

    assert template.names() == {"a", "b", "c"}


def test_a_malformed_template_fails_to_parse_with_its_line() -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        parse("ok\n{% for x in xs %}never closed")

    assert caught.value.line == 2 and caught.value.code == "template.syntax"


def test_the_sandbox_has_no_globals() -> None:
    with pytest.raises(UndefinedVariable):
        render("{{ range(3) }}", {})
