"""MCP tools whose arguments the gateway validates itself (field-level errors, aliases), on the SDK's `Tool`."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ConfigDict

Handler = Callable[[dict[str, Any], Context], Awaitable[CallToolResult | InputRequiredResult]]


class _RawArguments(ArgModelBase):
    """Hands the arguments through untouched: the gateway validates them itself."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.__pydantic_extra__ or {})}


def raw_tool(
    *,
    name: str,
    title: str,
    description: str,
    input_schema: dict[str, Any],
    result: Any,
    annotations: ToolAnnotations,
    handler: Handler,
    output_schema: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> Tool:
    """A tool that advertises `input_schema` and `result`'s output schema and passes raw arguments to `handler`.

    `result` is the model (or union) structured results are validated against; `output_schema`, when given, is
    published instead of the one derived from it; `meta` is the tool's `_meta`.
    """

    async def call(arguments: dict[str, Any], ctx: Context) -> Annotated[CallToolResult, result]:
        return await handler(arguments, ctx)  # type: ignore[return-value]

    tool = Tool.from_function(call, name=name, title=title, description=description, annotations=annotations, meta=meta)
    tool.parameters = input_schema
    tool.fn_metadata = FuncMetadata(arg_model=_RawArguments, output_model=result, output_schema=output_schema)
    tool.fn_metadata.output_schema = admit_errors(tool.fn_metadata.output_schema or {"type": "object"})
    return tool


ERROR_SHAPES = {
    "error": "Only on isError results: what went wrong (code, message, and field errors for bad arguments).",
    "preflight": "Only on isError results of a gated tool: every justification it needs before it runs.",
}
"""The error shapes and what they hold: each tool's output schema admits them, the server's instructions say
what they are."""


def admit_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """The output schema, also admitting the `{"error": …}` and `{"preflight": …}` shapes of tool errors.

    Clients validate `structuredContent` against `outputSchema` (the TypeScript SDK does so on `isError` results
    too), so the error shapes are declared instead of breaking the schema.
    """
    schema = dict(schema)
    properties = dict(schema.get("properties", {}))
    for name in ERROR_SHAPES:
        properties[name] = {"type": "object"}
    schema["properties"] = properties
    branches = schema.pop("anyOf", None) or [{"required": schema.pop("required", [])}]
    schema.pop("required", None)
    schema["anyOf"] = [*branches, *({"required": [name], "maxProperties": 1} for name in ERROR_SHAPES)]
    return schema
