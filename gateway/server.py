"""Building the `MCPServer`: one MCP tool per `ToolSpec`, each a thin call into the `Gateway` runtime."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, RequestStateSecurity
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations

from gateway.compact import compact_schema, example_line, instructions, shallow_schema
from gateway.maps import map_app, with_app
from gateway.preflight.surface import tools as preflight_tools
from gateway.rawtool import raw_tool
from gateway.runtime import Gateway
from gateway.security.handler_size import oversized_handler
from gateway.surface import REGISTRARS
from gateway.tasks.extension import TasksExtension
from gateway.toolsets import ToolsetServer, chosen, toolset_of
from geogate.settings import Settings
from schemas.result_handlers import ResultHandler
from schemas.tools import TOOLS, ToolSpec
from schemas.tools.extra import load as load_extra
from schemas.tools.handlers import HANDLED_FIELD, HANDLER_ARG, HandledResult
from schemas.tools.limits import bounds_note

if TYPE_CHECKING:
    from gateway.security.wiring import AuthSetup


def _annotations(spec: ToolSpec) -> ToolAnnotations:
    """The hints, each stated where it differs from MCP's default (read-only and idempotent: false; destructive and
    open-world: true) and the last two always."""
    hints = spec.hints
    return ToolAnnotations(
        read_only_hint=hints.read_only or None,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent or None,
        open_world_hint=hints.open_world,
    )


def build_tool(spec: ToolSpec, gateway: Gateway) -> Tool:
    """The MCP tool for `spec`: schema from its args model, `outputSchema` from its result model."""
    # Both the SDK server (`convert_result`) and its client validate structuredContent against the output model:
    # a handler's value travels as `{"result": value}` (HandledResult), which the published schema admits.
    if HANDLED_FIELD in spec.result.model_fields:
        raise ValueError(f"{spec.name}: a result field named {HANDLED_FIELD!r} would shadow handled results")

    async def handler(arguments: dict[str, Any], ctx: Context) -> CallToolResult | InputRequiredResult:
        limit = gateway.settings.security.handler_max_script_bytes
        if (refused := oversized_handler(spec.name, arguments, ctx, limit)) is not None:
            return refused
        result = await gateway.call(spec, arguments, ctx)
        return await with_app(gateway, result) if spec.app else result

    return raw_tool(
        name=spec.name,
        title=spec.title,
        description=spec.description + described_bounds(spec, gateway.settings) + example_line(spec.examples),
        input_schema=input_schema(spec),
        result=spec.result | HandledResult,
        output_schema=output_schema(spec),
        annotations=_annotations(spec),
        handler=handler,
        meta={"ui": {"resourceUri": spec.app}} if spec.app else None,
    )


def described_bounds(spec: ToolSpec, settings: Settings) -> str:
    """The bounds `spec`'s calls are checked against besides the result size every call has (the server's
    instructions state that one), with this deployment's values; empty when it has none."""
    return bounds_note(spec.bounds, settings.limits.model_dump()) if spec.bounds else ""


HANDLER_PROPERTY: dict[str, Any] = {
    "type": "object",
    "required": list(ResultHandler.model_json_schema()["required"]),
    "description": "Optional {language, script} run over the output (server instructions).",
}
"""`result_handler` as each tool publishes it: what it is is said once, in the server's instructions."""


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool's argument schema, compacted, plus the optional `result_handler` every tool accepts."""
    schema = compact_schema(spec.args.model_json_schema())
    schema.setdefault("properties", {})[HANDLER_ARG] = dict(HANDLER_PROPERTY)
    return schema


def output_schema(spec: ToolSpec) -> dict[str, Any]:
    """The tool's result schema that also admits a handled result, `{"result": <the handler's value>}`.

    The tool's properties stay at the root (clients read them there), each with its JSON type (`shallow_schema`);
    `anyOf` tells the two shapes apart.
    """
    schema = shallow_schema(spec.result.model_json_schema())
    required = schema.pop("required", [])
    schema.setdefault("properties", {})[HANDLED_FIELD] = {"description": "Only with a result_handler: its value."}
    schema["anyOf"] = [
        {"required": required, "not": {"required": [HANDLED_FIELD]}},
        {"required": [HANDLED_FIELD], "maxProperties": 1},
    ]
    return schema


def build_server(
    settings: Settings,
    gateway: Gateway | None = None,
    auth: "AuthSetup | None" = None,
    request_state: RequestStateSecurity | None = None,
) -> tuple[MCPServer, Gateway]:
    """The MCP server and its runtime; the runtime starts and stops with the server's lifespan.

    With `auth`, the SDK verifies bearer tokens (`TokenVerifier`, `AuthSettings`) before any request reaches MCP.
    `request_state` seals MCP's `requestState` under keys other gateways share (`gateway.security.request_state`);
    without it, under a key of this process (stdio, tests).
    """
    runtime = gateway or Gateway(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[Gateway]:
        await runtime.start()
        try:
            yield runtime
        finally:
            await runtime.stop()

    published = chosen(settings)
    every = [build_tool(spec, runtime) for spec in TOOLS.values()] + preflight_tools(runtime)
    extra = load_extra(settings.extra_tools)  # tools a deployment adds (`GEOGATE_EXTRA_TOOLS`); none by default
    if extra is not None:
        every += extra.gateway_tools(runtime)
    tools = [tool for tool in every if toolset_of(tool.name) in published]
    secured = {"token_verifier": auth.verifier, "auth": auth.settings} if auth is not None else {}
    server = ToolsetServer(
        "geogate",
        settings=settings,
        hidden=frozenset(tool.name for tool in every) - {tool.name for tool in tools},
        version="0.1.0",
        instructions=instructions(settings, published),
        tools=tools,
        lifespan=lifespan,
        extensions=[TasksExtension(runtime), map_app(settings)],
        request_state_security=request_state,
        **secured,
    )
    for register in REGISTRARS:
        register(server, runtime)
    if extra is not None:
        extra.register_gateway(server, runtime)
    return server, runtime
