"""Mistral `[TOOL_CALLS]`: JSON arrays and `NAME[ARGS]{…}` read to the JSON decoder's end."""

from tests.unit.workers.llm.formats.check import calls, extract, kinds
from workers.llm.formats import parse_reply


def test_array_and_named_forms() -> None:
    assert calls('[TOOL_CALLS] [{"name": "raster_info", "arguments": {"uri": "a"}}]</s>') == [
        ("raster_info", {"uri": "a"})
    ]
    assert calls('[TOOL_CALLS]raster_info[CALL_ID]abc123XYZ[ARGS]{"uri": "a"}') == [("raster_info", {"uri": "a"})]
    assert calls('[TOOL_CALLS]raster_info{"uri": "a"}') == [("raster_info", {"uri": "a"})]


def test_consecutive_named_calls_with_or_without_a_repeated_marker() -> None:
    expected = [("raster_info", {"uri": "a"}), ("raster_info", {"uri": "b"})]
    assert calls('[TOOL_CALLS]raster_info[ARGS]{"uri": "a"}[TOOL_CALLS]raster_info[ARGS]{"uri": "b"}') == expected
    assert calls('[TOOL_CALLS]raster_info[ARGS]{"uri": "a"} raster_info[ARGS]{"uri": "b"}') == expected


def test_the_marker_inside_an_argument_does_not_start_a_call() -> None:
    text = '[TOOL_CALLS]write_file[ARGS]{"path": "p", "content": "[TOOL_CALLS]raster_info[ARGS]{\\"uri\\": 1}"}'
    assert calls(text) == [("write_file", {"path": "p", "content": '[TOOL_CALLS]raster_info[ARGS]{"uri": 1}'})]


def test_prose_after_the_calls_is_content_not_another_call() -> None:
    parsed = parse_reply('Checking.[TOOL_CALLS]raster_info[ARGS]{"uri": "a"} Done.')
    assert len(parsed.calls) == 1 and parsed.content == "Checking. Done."


def test_magistral_reasoning_is_split_off() -> None:
    found = extract(
        '[THINK]use [TOOL_CALLS]raster_info[ARGS]{"uri": "x"}?[/THINK][TOOL_CALLS]raster_info[ARGS]{"uri": "y"}'
    )
    assert [c.params for c in found.calls] == [{"uri": "y"}]
    assert found.reasoning == 'use [TOOL_CALLS]raster_info[ARGS]{"uri": "x"}?'


def test_cut_off_and_malformed_calls() -> None:
    for cut in (
        "[TOOL_CALLS]",
        "[TOOL_CALLS]raster_in",
        "[TOOL_CALLS]raster_info[AR",
        '[TOOL_CALLS]raster_info[ARGS]{"u',
    ):
        assert kinds(cut) == ["truncated"], cut
    assert kinds("[TOOL_CALLS]raster_info[ARGS]uri=a") == ["invalid_markup"]
