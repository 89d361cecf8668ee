"""Published schemas: every error a tool returns conforms to its own outputSchema, as strict clients check.

The TypeScript SDK (the MCP Inspector) validates `structuredContent` against `outputSchema` on `isError` results
too; a tool error that did not conform was rejected there.
"""

import anyio
import jsonschema
import pytest

from gateway import results
from gateway.server import build_server
from geogate.settings import Settings
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
