"""`geogate llm parse`: one JSON line out per line in, a pure function of each line (issues 7 and 13)."""

import io
import json

from tests.unit.workers.llm.samples import RASTER_INFO
from workers.llm import parse_lines

LINES = [
    json.dumps({"text": 'ok {"tool": "raster_info", "params": {"path": "a.tif"}}', "tools": [RASTER_INFO]}),
    json.dumps({"text": '{"tool": "rasterinfo", "params": {}}', "tools": [RASTER_INFO]}),
    "",
    "not json",
    json.dumps(
        {
            "text": "<think>\nneed metadata\n</think>\n<tool_call>\n<function=raster_info>\n<parameter=uri>\nb.tif\n"
            "</parameter>\n<parameter=band>\n2\n</parameter>\n</function>\n</tool_call>",
            "tools": [RASTER_INFO],
        }
    ),
    json.dumps({"text": '<tool_call>\n{"name": "raster_info", "arguments": {"uri": "c.t', "tools": [RASTER_INFO]}),
    "[1, 2]",
]


def run(lines: list[str]) -> tuple[int, list[dict[str, object]]]:
    out = io.StringIO()
    status = parse_lines(io.StringIO("\n".join(lines) + "\n"), out)
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def test_each_line_yields_format_calls_errors_content_and_reasoning() -> None:
    status, results = run(LINES)

    assert len(results) == len(LINES) and status == 1
    first, unknown, blank, broken, qwen, cut, array = results
    assert first == {
        "format": "json",
        "calls": [{"tool": "raster_info", "params": {"uri": "a.tif"}, "aliases": {"path": "uri"}}],
        "errors": [],
        "content": 'ok {"tool": "raster_info", "params": {"path": "a.tif"}}',
        "reasoning": "",
    }
    assert unknown["calls"] == [] and unknown["errors"][0]["suggestion"] == "raster_info"
    assert [r["errors"][0]["kind"] for r in (blank, broken, array)] == ["invalid_input"] * 3
    assert qwen["format"] == "qwen3_xml" and qwen["reasoning"] == "need metadata"
    assert qwen["calls"] == [{"tool": "raster_info", "params": {"uri": "b.tif", "band": 2}}]
    assert cut["format"] == "hermes" and cut["calls"] == [] and cut["errors"][0]["kind"] == "truncated"


def test_output_depends_on_each_line_alone() -> None:
    _, together = run(LINES)
    alone = [run([line])[1][0] for line in LINES]
    _, reversed_run = run(LINES[::-1])

    assert together == alone == reversed_run[::-1]


def test_a_line_cut_in_its_second_call_yields_one_line_with_the_first_call_and_the_cut() -> None:
    text = (
        '<｜DSML｜ calls>\n<｜DSML｜ invoke name="raster_info">\n'
        '<｜DSML｜ parameter name="uri" string="true">a.tif</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n'
        '<｜DSML｜ invoke name="raster_info">\n<｜DSML｜ parameter name="uri" string="true">b.t'
    )
    status, results = run([json.dumps({"text": text, "tools": [RASTER_INFO]})])

    assert status == 1 and len(results) == 1
    assert results[0]["format"] == "deepseek_dsml"
    assert results[0]["calls"] == [{"tool": "raster_info", "params": {"uri": "a.tif"}}]
    assert [e["kind"] for e in results[0]["errors"]] == ["truncated"]
