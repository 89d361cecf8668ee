"""The MCP conformance suite's fixtures, served only with `GEOGATE_CONFORMANCE=1` (never in a normal run).

The suite expects named tools, resources and prompts (`test_*`, `test://…`): `content`, `mrtr` and `surface` are
ported from the python-sdk's `examples/servers/everything-server`. The task fixtures (`slow_compute`, `failing_job`,
`protocol_error_job`, `confirm_delete`, `multi_input`) are Geogate tools like any other: they run through the log and
the workers (`schemas.tools.conformance`, `workers.conformance`).
"""

from typing import TYPE_CHECKING

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult

from gateway.conformance import content, mrtr, surface
from gateway.conformance.content import name_elicitation
from schemas.tools.conformance import CONFORMANCE_SPECS, SLOW_COMPUTE

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


def tools(runtime: "Gateway") -> list[Tool]:
    """The task fixtures: Geogate tools whose calls go through the log and the workers."""
    from gateway.server import build_tool

    return [build_tool(spec, runtime) for spec in CONFORMANCE_SPECS]


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Add the in-process fixtures (content shapes, MRTR, prompts, resources) to `server`."""
    for family in (content, mrtr, surface):
        family.register(server, runtime)

    @server.tool()
    async def test_tool_with_task(ctx: Context) -> CallToolResult | InputRequiredResult:
        """Asks the user's name (MRTR, synchronously), then runs a job through the log as a task (needs tasks)."""
        answer = (ctx.input_responses or {}).get("user_name")
        if not isinstance(answer, ElicitResult) or not answer.content:
            return InputRequiredResult(input_requests={"user_name": name_elicitation()})
        name = str(answer.content.get("name", "stranger"))
        return await runtime.call(SLOW_COMPUTE, {"seconds": 0.2, "label": f"Hello, {name}!"}, ctx)

    @server.tool()
    def greet(name: str) -> str:
        """Says hello (a synchronous tool: never a task)."""
        return f"Hello, {name}!"
