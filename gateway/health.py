"""`GET /health`: the gateway is up and its Redis answers."""

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway


def register(server: "MCPServer", runtime: "Gateway") -> None:
    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        ok = runtime.store is not None and bool(await runtime.store.redis.ping())
        return JSONResponse({"ok": ok, "waiting_calls": runtime.reader.watching if runtime.reader else 0})
