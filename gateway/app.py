"""The ASGI app: the MCP endpoint at /mcp plus the routes of `gateway.surface`, behind `gateway.security`."""

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import ASGIApp

from gateway.security.request_state import request_state_security
from gateway.security.wiring import auth_setup, check_exposure, secure
from gateway.server import build_server
from geogate.calls import ops_feed
from geogate.eventlog.store import async_client
from geogate.process.memory import settle_memory
from geogate.settings import Settings

NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
"""`gateway.security.origin` checks Host and Origin on every route (the SDK's check covers /mcp only)."""


def build_app(settings: Settings) -> ASGIApp:
    """The gateway's ASGI app for uvicorn (Streamable HTTP at /mcp, both protocol eras).

    Raises:
        SettingsError: a non-loopback bind without authentication, unusable auth settings or requestState keys.
    """
    check_exposure(settings)
    setup = auth_setup(settings)
    server, runtime = build_server(settings, auth=setup, request_state=request_state_security(settings))
    app = server.streamable_http_app(
        host=settings.host,
        max_request_body_size=settings.security.max_request_bytes,
        transport_security=NO_SDK_HOST_CHECK,
    )
    _follow_the_log(app, settings)
    return secure(app, settings, runtime, setup)


def serve(settings: Settings) -> None:
    """Serve the gateway over HTTP until stopped (`python -m gateway`, which `geogate gateway` and `geogate dev` run):
    the app is built, then the start-up heap frozen (`geogate.process.memory`), then uvicorn runs it.

    Raises:
        SystemExit: the server did not start (uvicorn has said why: the port in use, say).
    """
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    app = build_app(settings)
    # The SDK's session manager says INFO when it starts and stops: lifecycle noise on the terminal of `geogate dev`.
    logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)
    settle_memory()
    server = uvicorn.Server(uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning"))
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises Ctrl-C again once it stopped, as `uvicorn.run` does
        server.run()
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)  # as `uvicorn.run` does


def _follow_the_log(app: Starlette, settings: Settings) -> None:
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(scope: Starlette) -> AsyncIterator[None]:
        async with inner(scope), following_the_log(settings):
            yield

    app.router.lifespan_context = lifespan


@asynccontextmanager
async def following_the_log(settings: Settings) -> AsyncIterator[None]:
    """Keep the ops summary level with the log while the gateway runs (every replica may; see `ops_feed`)."""
    client = async_client(settings.require_redis_url())
    async with anyio.create_task_group() as group:
        group.start_soon(ops_feed.follow, client, settings.keys())
        try:
            yield
        finally:
            group.cancel_scope.cancel()
    await client.aclose()
