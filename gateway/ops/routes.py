"""The `/ops` routes: dashboard, its panels and live stream, per-call and per-workflow pages, JSON, static files.

Read-only: no route appends to the log or writes a key. Every route passes `require_admin` first.
"""

import time
from collections.abc import AsyncIterator
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse

from gateway.ops.access import require_admin
from gateway.ops.figures import WINDOWS
from gateway.ops.pages import call_page, tile_grid, workflow_page
from gateway.ops.reads import TailFilter, ToolNames, follow, hash_of, newest
from gateway.ops.render import render
from gateway.ops.summary import LeaseFinder, read_summary
from gateway.ops.timeline import rows
from geogate.calls.keys import Keys

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

STATIC = files("gateway.ops").joinpath("static")
TAIL_ROWS = 50
CHANGED_EVERY_S = 1.0
"""The panels are re-read at most this often while events arrive, and at least every `QUIET_S`."""
QUIET_S = 5.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def window_of(request: Request) -> str:
    window = request.query_params.get("window", "1h")
    return window if window in WINDOWS else "1h"


def tail_filter(request: Request) -> TailFilter:
    q = request.query_params
    return TailFilter(
        type=q.get("type", ""), tool=q.get("tool", ""), actor=q.get("actor", ""), trace=q.get("trace", "")
    )


def parse_since(raw: str, keys: Keys) -> dict[str, str] | None:
    """`calls:1-0,llm:2-0` (category:entry id), as the page hands its stream positions to its live stream."""
    cursors: dict[str, str] = {}
    for part in filter(None, raw.split(",")):
        category, _, entry_id = part.partition(":")
        if not entry_id.replace("-", "").isdigit():
            return None
        cursors[keys.stream(category)] = entry_id
    return cursors or None


def since_param(cursors: dict[str, str], keys: Keys) -> str:
    prefix = keys.stream_prefix()
    return ",".join(f"{stream.removeprefix(prefix)}:{entry}" for stream, entry in cursors.items())


class OpsRoutes:
    """The handlers, bound to the gateway runtime (its store exists once the lifespan started)."""

    def __init__(self, runtime: "Gateway") -> None:
        self.runtime = runtime
        self.leases = LeaseFinder()

    @property
    def client(self) -> Any:
        assert self.runtime.store is not None, "gateway not started"
        return self.runtime.store.redis

    @property
    def keys(self) -> Keys:
        assert self.runtime.store is not None, "gateway not started"
        return self.runtime.store.keys

    async def dashboard(self, request: Request) -> Response:
        require_admin(request)
        window, filt = window_of(request), tail_filter(request)
        summary = await read_summary(self.client, self.keys, window, leases=self.leases)
        recent, cursors = await newest(self.client, self.keys, TAIL_ROWS * 4)
        tools = await ToolNames(self.client, self.keys).of(recent)
        shown = [s for s, tool in zip(recent, tools, strict=True) if filt.matches(s, tool)][-TAIL_ROWS:]
        context = {"summary": summary, "window": window, "windows": list(WINDOWS), "filter": filt}
        context |= {"tail": rows(shown, "")[::-1], "since": since_param(cursors, self.keys), "query": request.url.query}
        return HTMLResponse(render("dashboard.html", **context))

    async def panels(self, request: Request) -> Response:
        require_admin(request)
        window = window_of(request)
        summary = await read_summary(self.client, self.keys, window, leases=self.leases)
        return HTMLResponse(render("panels.html", summary=summary, window=window))

    async def summary_json(self, request: Request) -> Response:
        require_admin(request)
        summary = await read_summary(self.client, self.keys, window_of(request), leases=self.leases)
        return JSONResponse(summary.model_dump(mode="json"))

    async def stream(self, request: Request) -> Response:
        require_admin(request)
        since = parse_since(request.query_params.get("since", ""), self.keys)
        if since is None:
            _, since = await newest(self.client, self.keys, 1)
        body = self._events(tail_filter(request), since)
        return StreamingResponse(body, media_type="text/event-stream", headers=SSE_HEADERS)

    async def _events(self, filt: TailFilter, cursors: dict[str, str]) -> AsyncIterator[str]:
        names, last_changed, pending = ToolNames(self.client, self.keys), time.monotonic(), False
        yield "event: changed\ndata: open\n\n"
        async for batch in follow(self.client, cursors, block_ms=1000):
            if batch:
                pending = True
                shown = [s for s, tool in zip(batch, await names.of(batch), strict=True) if filt.matches(s, tool)]
                if shown:
                    yield _sse("tail", _one_line(render("tail_rows.html", tail=rows(shown, "")[::-1])))
            quiet = time.monotonic() - last_changed
            if (pending and quiet >= CHANGED_EVERY_S) or quiet >= QUIET_S:
                last_changed, pending = time.monotonic(), False
                yield _sse("changed", "1")

    async def call(self, request: Request) -> Response:
        require_admin(request)
        call_id = request.path_params["call_id"]
        page = await call_page(self.runtime, call_id)
        if page is None:
            return HTMLResponse(render("missing.html", what="call", ident=call_id), status_code=404)
        handler = await self.client.hgetall(self.keys.projections().handler(call_id))
        return HTMLResponse(render("call.html", page=page, has_handler=bool(handler)))

    async def tiles(self, request: Request) -> Response:
        """The tile grid of a tiled call alone: what its card reloads while the call runs."""
        require_admin(request)
        call_id = request.path_params["call_id"]
        state = await hash_of(self.client, self.keys.projections().call(call_id))
        grid = await tile_grid(self.client, self.keys, call_id, state) if state else None
        if grid is None:
            return HTMLResponse(render("missing.html", what="tiled call", ident=call_id), status_code=404)
        return HTMLResponse(render("tile_grid.html", grid=grid))

    async def workflow(self, request: Request) -> Response:
        require_admin(request)
        state_id = request.path_params["state_id"]
        page = await workflow_page(self.client, self.keys, state_id)
        if page is None:
            return HTMLResponse(render("missing.html", what="workflow run", ident=state_id), status_code=404)
        return HTMLResponse(render("workflow.html", page=page))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        path = STATIC.joinpath(name)
        if "/" in name.strip("/").replace("vendor/", "", 1) or ".." in name or not path.is_file():
            hint = " (the front-end libraries are installed by `make ops-assets`)" if name.startswith("vendor/") else ""
            return PlainTextResponse(f"no such file: {name}{hint}", status_code=404)
        return FileResponse(str(path), headers={"Cache-Control": "max-age=3600"})


def _sse(kind: str, data: str) -> str:
    return f"event: {kind}\ndata: {data}\n\n"


def _one_line(html: str) -> str:
    return " ".join(html.split())


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Add the `/ops` routes to `server`."""
    ops = OpsRoutes(runtime)
    server.custom_route("/ops", methods=["GET"])(ops.dashboard)
    server.custom_route("/ops/panels", methods=["GET"])(ops.panels)
    server.custom_route("/ops/api/summary", methods=["GET"])(ops.summary_json)
    server.custom_route("/ops/stream", methods=["GET"])(ops.stream)
    server.custom_route("/ops/calls/{call_id}", methods=["GET"])(ops.call)
    server.custom_route("/ops/calls/{call_id}/tiles", methods=["GET"])(ops.tiles)
    server.custom_route("/ops/workflows/{state_id}", methods=["GET"])(ops.workflow)
    server.custom_route("/ops/static/{name:path}", methods=["GET"])(ops.static)
