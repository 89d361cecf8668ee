"""The ASGI app: the MCP endpoint at /mcp plus /health; wiring only."""

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from eventlog.settings import Settings
from gateway.server import build_server


def build_app(settings: Settings) -> Starlette:
    """The gateway's ASGI app for uvicorn (Streamable HTTP at /mcp, both protocol eras)."""
    server, runtime = build_server(settings)

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        ok = runtime.store is not None and bool(await runtime.store.redis.ping())
        return JSONResponse({"ok": ok, "waiting_calls": runtime.reader.watching if runtime.reader else 0})

    return server.streamable_http_app()
