"""The ASGI app: the MCP endpoint at /mcp plus the routes of `gateway.surface`; wiring only."""

from starlette.applications import Starlette

from eventlog.settings import Settings
from gateway.server import build_server


def build_app(settings: Settings) -> Starlette:
    """The gateway's ASGI app for uvicorn (Streamable HTTP at /mcp, both protocol eras)."""
    server, _ = build_server(settings)
    return server.streamable_http_app()
