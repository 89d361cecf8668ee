"""Which tools this gateway publishes (`GEOGATE_TOOLSETS`), and the answer to a call of one it does not."""

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult

from geogate.settings import Settings, SettingsError
from schemas.tools import TOOLSET
from schemas.tools.toolsets import EXTRA, GATEWAY_TOOLS, published, unpublished_message


def chosen(settings: Settings) -> frozenset[str]:
    """The toolsets `settings` publishes; the extra tools' whenever `GEOGATE_EXTRA_TOOLS` names a module.

    Raises:
        SettingsError: a name is not a toolset.
    """
    try:
        return published(settings.toolsets)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def toolset_of(name: str) -> str:
    """The toolset of a published tool: Geogate's own, the gateway's, else the extra tools'."""
    return TOOLSET.get(name) or GATEWAY_TOOLS.get(name, EXTRA)


def not_published(name: str, settings: Settings) -> str:
    """Why a call of `name` is refused: its toolset, and the setting that publishes it."""
    return unpublished_message(name, toolset_of(name), settings.toolsets)


class ToolsetServer(MCPServer):
    """An `MCPServer` that answers a call of a tool it left out of `tools/list` with the setting that publishes it,
    instead of an unknown tool."""

    def __init__(self, *args: Any, settings: Settings, hidden: frozenset[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._geogate_settings = settings
        self._hidden = hidden

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Raises: ToolError: `name` is a tool of a toolset this server does not publish."""
        if name in self._hidden:
            raise ToolError(not_published(name, self._geogate_settings))
        return await super().call_tool(name, arguments, context)
