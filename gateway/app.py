"""The ASGI app: the MCP endpoint at /mcp plus the routes of `gateway.surface`; wiring only."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import redis.asyncio as aredis
from starlette.applications import Starlette

from eventlog import ops_feed
from eventlog.settings import Settings
from eventlog.streams import Keys
from gateway.server import build_server


def build_app(settings: Settings) -> Starlette:
    """The gateway's ASGI app for uvicorn (Streamable HTTP at /mcp, both protocol eras)."""
    server, _ = build_server(settings)
    app = server.streamable_http_app()
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(scope: Starlette) -> AsyncIterator[None]:
        async with inner(scope), following_the_log(settings):
            yield

    app.router.lifespan_context = lifespan
    return app


@asynccontextmanager
async def following_the_log(settings: Settings) -> AsyncIterator[None]:
    """Keep the ops summary level with the log while the gateway runs (every replica may; see `ops_feed`)."""
    client = aredis.Redis.from_url(settings.require_redis_url(), decode_responses=False)
    async with anyio.create_task_group() as group:
        group.start_soon(ops_feed.follow, client, Keys(settings.prefix))
        try:
            yield
        finally:
            group.cancel_scope.cancel()
    await client.aclose()
