"""The tool surface a client's model reads: toolsets chosen by `GEOGATE_TOOLSETS`, the default list's count and
size measured through the server's own listing, an example on every tool, shared parts said once."""

import json
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ListToolsResult

from gateway.preflight.surface import EXAMPLES as GATEWAY_EXAMPLES
from gateway.preflight.surface import PreflightTools, RevokeArgs
from gateway.server import build_server
from geogate.settings import DEFAULT_TOOLSETS, Settings, SettingsError
from schemas.preflight.justification import PersistItem, PersistMany
from schemas.tools import EXTRA, TOOLS, TOOLSET
from schemas.tools.toolsets import GATEWAY_TOOLS, TOOLSETS, concept_toolset

BEFORE_BYTES, BEFORE_TOOLS = 130_231, 32
"""The default `tools/list` before toolsets and compact schemas (bytes of its JSON result, tools)."""
MAX_BYTES_PER_TOOL = 2_600
"""The bound on the default list's bytes per tool (docs/toolsets.md has the figures)."""
GATEWAY_ARGS = {
    "persist_justification": PersistItem,
    "persist_justifications": PersistMany,
    "revoke_justification": RevokeArgs,
}


def listing(settings: Settings) -> ListToolsResult:
    """`tools/list`'s result as the server answers it (the SDK's handler wraps `list_tools` the same way)."""
    server, _ = build_server(settings)
    return ListToolsResult(tools=anyio.run(server.list_tools))


def wire_bytes(result: ListToolsResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


@pytest.fixture(scope="module")
def default() -> ListToolsResult:
    return listing(Settings(redis_url="redis://unused"))


def test_the_default_list_is_the_default_toolsets_and_stays_under_40_tools(default: ListToolsResult) -> None:
    names = {tool.name for tool in default.tools}
    own = {**TOOLSET, **GATEWAY_TOOLS}

    assert len(names) < 40
    assert names == {name for name, toolset in own.items() if toolset in DEFAULT_TOOLSETS}
    assert not names & {"startChainOfThought", "submitThought", "list_workflows", "revoke_justification"}


def test_the_default_list_is_within_its_size_bound(default: ListToolsResult) -> None:
    size = wire_bytes(default)

    assert size / len(default.tools) <= MAX_BYTES_PER_TOOL
    assert size / len(default.tools) <= 0.65 * BEFORE_BYTES / BEFORE_TOOLS


def test_all_publishes_every_tool_and_a_list_of_toolsets_publishes_those() -> None:
    every = {tool.name for tool in listing(Settings(redis_url="redis://unused", toolsets=["all"])).tools}
    two = {tool.name for tool in listing(Settings(redis_url="redis://unused", toolsets=["vector", "admin"])).tools}

    assert every == set(TOOLS) | set(GATEWAY_TOOLS)
    assert two == {name for name, toolset in {**TOOLSET, **GATEWAY_TOOLS}.items() if toolset in {"vector", "admin"}}


def test_the_setting_is_read_as_a_comma_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEOGATE_TOOLSETS", "raster, workflows")

    assert Settings().toolsets == ["raster", "workflows"]


def test_an_unknown_toolset_is_refused_naming_the_setting() -> None:
    with pytest.raises(SettingsError, match=r"GEOGATE_TOOLSETS: unknown toolset.*rasters"):
        build_server(Settings(redis_url="redis://unused", toolsets=["rasters"]))


@pytest.mark.parametrize("name", ["submitThought", "revoke_justification"])
def test_a_tool_left_out_is_not_callable_and_the_error_names_the_setting(name: str) -> None:
    server, _ = build_server(Settings(redis_url="redis://unused"))

    with pytest.raises(ToolError, match=rf"{name}.*toolset.*GEOGATE_TOOLSETS"):
        anyio.run(server.call_tool, name, {})


def test_a_name_that_is_no_tool_stays_unknown() -> None:
    server, _ = build_server(Settings(redis_url="redis://unused"))

    with pytest.raises(ToolError, match="Unknown tool: raster_infos"):
        anyio.run(server.call_tool, "raster_infos", {})


def test_every_tool_belongs_to_a_known_toolset() -> None:
    assert set(TOOLSET) == set(TOOLS) | set(EXTRA)  # extra tools: those a test of this process added
    assert {TOOLSET[name] for name in EXTRA} <= {"extra"}
    assert {TOOLSET[name] for name in TOOLS} | set(GATEWAY_TOOLS.values()) <= set(TOOLSETS)
    assert set(DEFAULT_TOOLSETS) <= set(TOOLSETS)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_has_examples_valid_for_its_arguments(name: str) -> None:
    spec = TOOLS[name]

    assert spec.examples, f"{name} has no example"
    for example in spec.examples:
        spec.args.model_validate(example)
    if spec.example_result is not None:
        spec.result.model_validate(spec.example_result)


@pytest.mark.parametrize("name", sorted(GATEWAY_ARGS))
def test_every_gateway_tool_has_examples_valid_for_its_arguments(name: str) -> None:
    assert {tool.name for tool in PreflightTools(None).tools()} == set(GATEWAY_EXAMPLES)  # type: ignore[arg-type]
    for example in GATEWAY_EXAMPLES[name]:
        GATEWAY_ARGS[name].model_validate(example)


def test_each_description_ends_with_its_first_example(default: ListToolsResult) -> None:
    examples = {**{name: spec.examples for name, spec in TOOLS.items()}, **GATEWAY_EXAMPLES}
    for tool in default.tools:
        last = (tool.description or "").rsplit("\nExample: ", 1)[1]
        assert json.loads(last) == examples[tool.name][0], tool.name


def test_shared_parts_are_said_once_in_the_instructions(default: ListToolsResult) -> None:
    server, _ = build_server(Settings(redis_url="redis://unused"))
    instructions = server.instructions or ""

    for shared in ("result_handler", "io.geogate/idempotency-key", "workspace root", "GEOGATE_LIMIT_RESULT_BYTES"):
        assert shared in instructions
    for tool in default.tools:
        assert "calls://{call_id}/raw" not in (tool.description or "")
        assert "GEOGATE_LIMIT_RESULT_BYTES" not in (tool.description or "")
        handler = tool.input_schema["properties"].get("result_handler")
        assert handler is None or len(json.dumps(handler)) < 200


def test_published_schemas_carry_no_generated_titles(default: ListToolsResult) -> None:
    def titles(schema: Any) -> int:
        if isinstance(schema, dict):
            own = isinstance(schema.get("title"), str)
            inner = {k: v for k, v in schema.items() if k != "properties"}
            props = schema.get("properties", {})
            return own + sum(titles(v) for v in inner.values()) + sum(titles(v) for v in props.values())
        if isinstance(schema, list):
            return sum(titles(v) for v in schema)
        return 0

    for tool in default.tools:
        assert titles(tool.input_schema) == 0 and titles(tool.output_schema) == 0, tool.name


def test_a_new_concept_names_its_toolset_or_is_refused_with_the_fix() -> None:
    assert concept_toolset("schemas.tools.raster_ops") == "raster"
    with pytest.raises(ValueError, match=r"'bbox' has no toolset: name one on its specs \(toolset="):
        concept_toolset("schemas.tools.bbox")
