"""The conformance fixtures are extra tools: published only where `GEOGATE_EXTRA_TOOLS` names them, then as Geogate
tools.

Issue 11: the fixtures are never loaded in a normal run; with the setting, every fixture tool is a `ToolSpec` (its
calls go through the log and the workers) and only resources and prompts are served by the gateway itself. Issue 33:
they live under tests/ and no product module names them.
"""

import json
import subprocess
import sys
from typing import Any

import anyio
import pytest

from gateway.server import build_server
from geogate.settings import Settings
from schemas.tools import EXTRA, TOOLS, add_extra
from tests.conformance.fixtures import SPECS as FIXTURE_SPECS
from tests.conformance_suite import FIXTURES

NORMAL_RUN = """
import json, sys
import anyio
from geogate.settings import Settings
from gateway.server import build_server

server, _ = build_server(Settings(redis_url="redis://unused"))
async def surface():
    tools = [t.name for t in await server.list_tools()]
    prompts = [p.name for p in await server.list_prompts()]
    resources = [str(r.uri) for r in await server.list_resources()]
    templates = [t.uri_template for t in await server.list_resource_templates()]
    return tools + prompts + resources + templates
names = anyio.run(surface)
print(json.dumps({"names": names, "loaded": [m for m in sys.modules if m == "tests" or m.startswith("tests.")]}))
"""


def test_a_normal_run_publishes_no_fixture_and_never_imports_the_fixture_module() -> None:
    run = subprocess.run([sys.executable, "-c", NORMAL_RUN], capture_output=True, text=True, check=True)
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    fixtures = {spec.name for spec in FIXTURE_SPECS}
    assert seen["loaded"] == []
    assert not [n for n in seen["names"] if n in fixtures or n.startswith(("test_", "test://"))]


@pytest.fixture(scope="module")
def surface() -> dict[str, Any]:
    server, _ = build_server(Settings(redis_url="redis://unused", extra_tools=FIXTURES))

    async def listing() -> dict[str, Any]:
        return {
            "tools": {t.name: t for t in await server.list_tools()},
            "prompts": {p.name for p in await server.list_prompts()},
            "resources": {str(r.uri) for r in await server.list_resources()},
            "templates": {t.uri_template for t in await server.list_resource_templates()},
        }

    return anyio.run(listing)


def test_with_the_setting_every_fixture_tool_is_a_geogate_tool_spec(surface: dict[str, Any]) -> None:
    fixture_tools = {n for n in surface["tools"] if n.startswith("test_")} | {"greet", "json_schema_2020_12_tool"}
    assert fixture_tools <= {spec.name for spec in FIXTURE_SPECS}
    assert {spec.name for spec in FIXTURE_SPECS} <= set(surface["tools"])
    assert {spec.name for spec in FIXTURE_SPECS} <= set(EXTRA)
    assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= surface["resources"]
    assert "test://template/{id}/data" in surface["templates"]
    assert "test_input_required_result_prompt" in surface["prompts"]


def test_the_2020_12_fixture_keeps_its_keywords_and_the_header_fixture_names_its_header(
    surface: dict[str, Any],
) -> None:
    schema = surface["tools"]["json_schema_2020_12_tool"].input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "addressDef" and schema["additionalProperties"] is False
    assert schema["allOf"][0]["anyOf"] and {"if", "then", "else"} <= set(schema)
    region = surface["tools"]["test_x_mcp_header"].input_schema["properties"]["region"]
    assert region["x-mcp-header"] == "Region" and region["type"] == "string"


def test_an_extra_tool_cannot_take_the_name_of_one_of_ours() -> None:
    with pytest.raises(ValueError, match="ping"):
        add_extra((TOOLS["ping"],))
