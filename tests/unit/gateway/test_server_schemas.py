"""Published schemas: every error a tool returns conforms to its own outputSchema, as strict clients check.

The TypeScript SDK (the MCP Inspector) validates `structuredContent` against `outputSchema` on `isError` results
too; a tool error that did not conform was rejected there.
"""

import anyio
import jsonschema
import pytest

from gateway import results
from gateway.server import build_server
from geogate.settings import LimitSettings, Settings
from schemas.validation import ArgumentsInvalid, FieldError


@pytest.fixture(scope="module")
def tools() -> dict:
    server, _ = build_server(Settings(redis_url="redis://unused"))
    return {tool.name: tool for tool in anyio.run(server.list_tools)}


def test_every_tool_error_shape_conforms_to_every_output_schema(tools: dict) -> None:
    invalid = results.invalid(ArgumentsInvalid("t", [FieldError("uri", "missing")])).structured_content
    hint = {"preflight": {"tool": "raster_reproject", "required": []}}
    for name, tool in tools.items():
        assert tool.output_schema is not None, name
        jsonschema.validate(invalid, tool.output_schema)
        jsonschema.validate(hint, tool.output_schema)


def test_a_partial_result_still_fails_the_schema(tools: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"pong": True}, tools["ping"].output_schema)


def test_each_tool_states_the_bounds_its_job_checks_with_this_servers_values() -> None:
    limits = LimitSettings(tiles=77, output_bytes=3 << 30, zones=123)
    server, _ = build_server(Settings(redis_url="redis://unused", limits=limits))
    listed = {tool.name: tool.description or "" for tool in anyio.run(server.list_tools)}

    assert "at most 77 windows" in listed["raster_terrain"] and "GEOGATE_LIMIT_TILES" in listed["raster_terrain"]
    assert "at most 3 GiB" in listed["vector_rasterize"] and "GEOGATE_LIMIT_OUTPUT_BYTES" in listed["raster_mosaic"]
    assert "at most 123 zones" in listed["zonal_stats"] and "GEOGATE_LIMIT_FEATURES" in listed["raster_contours"]
    assert "a structured result of at most 16 MiB of JSON (GEOGATE_LIMIT_RESULT_BYTES)" in (server.instructions or "")
