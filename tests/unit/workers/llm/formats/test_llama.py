"""Llama: the pythonic list read with Python's tokenizer and `ast` (literals only), and `<|python_tag|>`."""

import pytest

from tests.unit.workers.llm.formats.check import calls, extract, kinds


def test_python_literals_become_json_values() -> None:
    text = (
        "[raster_reproject(uri='a', dst_crs=\"EPSG:3857\", options={'tiled': True}), "
        "search_catalog(query='x', limit=None)]"
    )
    assert calls(text) == [
        ("raster_reproject", {"uri": "a", "dst_crs": "EPSG:3857", "options": {"tiled": True}}),
        ("search_catalog", {"query": "x", "limit": None}),
    ]


def test_the_list_ends_where_python_says_not_at_a_bracket_in_a_string() -> None:
    found = extract("[write_file(path='p', content='x)] y]')]\nThat is all.")
    assert [(c.tool, c.params) for c in found.calls] == [("write_file", {"path": "p", "content": "x)] y]"})]
    assert found.format == "pythonic" and found.content == "That is all."


def test_tuples_become_lists_and_a_call_without_arguments_is_empty() -> None:
    assert calls("[raster_stats(uri='a', percentiles=(5, 95.5)), workspace_summary()]") == [
        ("raster_stats", {"uri": "a", "percentiles": [5, 95.5]}),
        ("workspace_summary", {}),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[raster_info('a.tif')]",  # positional
        "[raster_info(uri=path)]",  # a variable
        "[raster_info(uri=__import__('os').name)]",  # code
        "[raster_info(**{'uri': 'a'})]",
        "[raster_info(uri={1, 2})]",  # a set
        "[raster_info(uri='a'), 3]",
    ],
)
def test_anything_but_keyword_literals_is_refused_without_evaluating_it(text: str) -> None:
    assert kinds(text) == ["invalid_markup"]


def test_a_list_cut_off_inside_a_string_or_a_bracket_keeps_only_the_complete_calls() -> None:
    assert kinds("[raster_info(uri='a.t") == ["truncated"]
    found = extract("[raster_info(uri='a'), raster_info(uri='b'), raster_stats(bands=[1,")
    assert [(c.tool, c.params) for c in found.calls] == [("raster_info", {"uri": "a"}), ("raster_info", {"uri": "b"})]
    assert [e.kind for e in found.errors] == ["truncated"]


def test_python_tag_with_json_or_call_syntax() -> None:
    assert calls('<|python_tag|>{"name": "raster_info", "parameters": {"uri": "a"}}<|eom_id|>') == [
        ("raster_info", {"uri": "a"})
    ]
    assert calls('<|python_tag|>raster_info.call(uri="a")') == [("raster_info", {"uri": "a"})]
    assert kinds("<|python_tag|>") == ["truncated"]
    assert kinds('<|python_tag|>raster_info(uri="a"') == ["truncated"]


def test_llama4_python_start_markers() -> None:
    found = extract('<|python_start|>[raster_info(uri="a")]<|python_end|>')
    assert [c.params for c in found.calls] == [{"uri": "a"}] and found.content == ""


def test_a_bracket_in_prose_is_not_a_call() -> None:
    found = extract("See [the docs](https://gdal.org) and [1, 2] for details.")
    assert found.calls == [] and found.errors == [] and found.format == "text"
