"""The MCP conformance suite's fixtures, published only with `GEOGATE_CONFORMANCE=1` (`make conformance`).

The fixture tools are Geogate tools (`schemas.tools.conformance`, jobs in `workers.conformance`): each call is a
`tool.requested` in the log, run by a worker, its outcome in the log. Only what is not a call stays here: the
`test://` resources and `test_*` prompts the suite reads (`resources`, `prompts`), and the list-change
announcements two fixtures make after their call.
"""

from typing import TYPE_CHECKING

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool

from gateway.conformance import prompts, resources
from schemas.tools.conformance import CONFORMANCE_SPECS
from schemas.tools.conformance.calls import PROMPTS_CHANGED, TOOLS_CHANGED

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


async def _tools_changed(ctx: Context) -> None:
    await ctx.notify_tools_changed()


async def _prompts_changed(ctx: Context) -> None:
    await ctx.notify_prompts_changed()


ANNOUNCERS = {TOOLS_CHANGED.name: _tools_changed, PROMPTS_CHANGED.name: _prompts_changed}
"""Fixtures whose successful call the gateway follows with a list-changed event to `subscriptions/listen`."""


def tools(runtime: "Gateway") -> list[Tool]:
    """Every fixture tool, each a Geogate tool whose calls go through the log and the workers."""
    from gateway.server import build_tool

    return [build_tool(spec, runtime, after=ANNOUNCERS.get(spec.name)) for spec in CONFORMANCE_SPECS]


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Add the fixture resources, resource subscriptions and prompts to `server`."""
    resources.register(server)
    prompts.register(server)
