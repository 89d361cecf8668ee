"""`geogate llm parse`: JSON lines in, one JSON line out per input (issue 7 item 2)."""

import io
import json

from tests.unit.workers.llm.samples import RASTER_INFO
from workers.llm import parse_lines


def test_each_line_yields_calls_and_errors() -> None:
    lines = [
        {"text": 'ok {"tool": "raster_info", "params": {"path": "a.tif"}}', "tools": [RASTER_INFO]},
        {"text": '{"tool": "rasterinfo", "params": {}}', "tools": [RASTER_INFO]},
    ]
    source = io.StringIO("\n".join(json.dumps(line) for line in lines) + "\n\nnot json\n")
    out = io.StringIO()

    status = parse_lines(source, out)

    first, second, third = (json.loads(line) for line in out.getvalue().splitlines())
    assert first == {
        "calls": [{"tool": "raster_info", "params": {"uri": "a.tif"}, "aliases": {"path": "uri"}}],
        "errors": [],
    }
    assert second["calls"] == [] and second["errors"][0]["suggestion"] == "raster_info"
    assert third["errors"][0]["kind"] == "invalid_input"
    assert status == 1
