"""`GET /tiles/{z}/{x}/{y}.png?path=…`: XYZ map tiles (WebMercatorQuad, 256²) of workspace rasters, for a MapLibre
raster source. Rendered by a worker (`workers.maps.xyz`), cached in Redis (`gateway.xyz_cache`), never logged.

The gateway checks the path against the workspace roots itself (it needs the file's version for the cache key and
answers a hostile path without a round trip); the worker checks it again before it opens anything.
"""

import logging
import time
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.xyz_cache import TileCache
from geogate.calls.keys import celery_queue_key
from geogate.queue.message import queue_message
from schemas import routes
from schemas.ids import new_id
from schemas.xyz import ReadRequest, TileQuery, TileReply, TileRequest, pack, unpack_reply

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

logger = logging.getLogger(__name__)

TILE_PATH = "/tiles/{z:int}/{x:int}/{y:int}.png"
TIMEOUT_S = 10.0
"""The longest a tile request waits for a worker; then 504 (and the worker skips the request if it comes later)."""
MAX_AGE_S = 60
"""Browsers may reuse a tile this long without asking; after that the ETag makes asking cheap (304)."""
STATUS_OF = {
    "arguments.invalid": 400,
    "path.invalid": 400,
    "band.out_of_range": 400,
    "option.unsupported": 400,
    "path.outside_workspace": 403,
    "path.not_found": 404,
    "raster.unreadable": 422,
    "zoom.too_low": 422,
    "layer.not_found": 404,
    "gdal.not_geospatial": 422,
    "gdal.corrupt": 422,
    "limit.features": 422,
    "limit.bytes": 422,
    "tile.timeout": 504,
    "layer.timeout": 504,
}
"""The HTTP status of each refusal (others: 500)."""


class TileRefused(Exception):
    """A request the gateway answers with a 4xx/5xx and a JSON body `{"error": {"code", "message"}}`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message

    def response(self) -> JSONResponse:
        body = {"error": {"code": self.code, "message": self.message}}
        return JSONResponse(body, status_code=STATUS_OF.get(self.code, 500))


def tile_query(request: Request) -> TileQuery:
    """The tile and style a request asks for.

    Raises:
        TileRefused: `arguments.invalid`, naming the parameter.
    """
    q, p = request.query_params, request.path_params
    try:
        bands = tuple(int(b) for b in q.get("bands", "").split(",") if b.strip())
        rescale = tuple(float(v) for v in q["rescale"].split(",")) if q.get("rescale") else None
    except ValueError as exc:
        raise TileRefused("arguments.invalid", "bands and rescale are comma-separated numbers") from exc
    fields = {"path": q.get("path", ""), "z": p["z"], "x": p["x"], "y": p["y"], "bands": bands, "rescale": rescale}
    try:
        return TileQuery.model_validate(fields | {"colormap": q.get("colormap") or None})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"])) or "tile"
        raise TileRefused("arguments.invalid", f"{where}: {error['msg']}") from exc


def workspace_file(raw: str, roots: list[Path]) -> Path:
    """The real path of `raw` inside a workspace root, as `workers.jobkit.files.resolve_in_workspace` finds it.

    Raises:
        TileRefused: `path.invalid`, `path.outside_workspace` or `path.not_found`.
    """
    raw = raw.removeprefix("file://")
    if "\0" in raw or not raw.strip():
        raise TileRefused("path.invalid", "path: not a usable path")
    if ".." in PurePath(raw).parts or not roots:
        raise TileRefused("path.outside_workspace", "path: '..' and paths outside the workspace are refused")
    candidates = [Path(raw)] if Path(raw).is_absolute() else [root / raw for root in roots]
    outside = False
    for candidate in candidates:
        try:
            real = candidate.resolve()
        except (OSError, RuntimeError) as exc:
            raise TileRefused("path.invalid", "path: not a usable path") from exc
        if not any(real.is_relative_to(root) for root in roots):
            outside = True
        elif real.is_file():
            return real
    if outside:
        raise TileRefused("path.outside_workspace", f"path: {raw!r} is outside the workspace")
    raise TileRefused("path.not_found", f"path: {raw!r} is not a file in the workspace")


def file_version(path: Path) -> str:
    """Changes whenever the file is rewritten (tools write by rename, which changes both)."""
    stat = path.stat()
    return f"{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_size}"


class TileRoutes:
    """The tile route, bound to the gateway runtime (its store exists once the lifespan started)."""

    def __init__(self, runtime: "Gateway") -> None:
        self.runtime = runtime

    @property
    def cache(self) -> TileCache:
        assert self.runtime.store is not None, "gateway not started"
        return TileCache(self.runtime.store.redis, self.runtime.store.keys)

    async def tile(self, request: Request) -> Response:
        try:
            query = tile_query(request)
            path = workspace_file(query.path, self.runtime.settings.workspace_roots())
            etag = f'"{query.digest(file_version(path))[:40]}"'
            if etag in request.headers.get("if-none-match", ""):
                return Response(status_code=304, headers=_headers(etag, "revalidated"))
            png, source = await self._png(query, etag.strip('"'))
        except TileRefused as exc:
            return exc.response()
        if not png:
            return Response(status_code=204, headers=_headers(etag, source))
        return Response(png, media_type="image/png", headers=_headers(etag, source))

    async def _png(self, query: TileQuery, digest: str) -> tuple[bytes, str]:
        cache = self.cache
        if (cached := await cache.get(digest)) is not None:
            return cached, "hit"
        reply = await self._render(query)
        if reply.status == "error":
            raise TileRefused(reply.code, reply.message)
        await cache.put(digest, reply.png)
        return reply.png, "miss"

    async def _render(self, query: TileQuery) -> TileReply:
        """Ask a gdal worker for the tile.

        Raises:
            TileRefused: `tile.timeout` when no worker answered within `TIMEOUT_S`.
        """
        shown = f"tile {query.z}/{query.x}/{query.y} of {query.path!r}"
        answer = await ask_worker(
            self.runtime, routes.RENDER_TILE, lambda to, end: TileRequest(query=query, reply_to=to, deadline=end), shown
        )
        if answer is None:
            raise TileRefused("tile.timeout", f"no worker drew {shown} within {TIMEOUT_S:g} s")
        return unpack_reply(answer)


async def ask_worker(
    runtime: "Gateway", task: str, request: Callable[[str, float], ReadRequest], shown: str
) -> bytes | None:
    """Send a read (a tile, a layer) to a gdal worker and wait for its answer on a list of its own; None when no
    worker answered within `TIMEOUT_S` (a worker taking the request later skips it)."""
    store = runtime.store
    assert store is not None, "gateway not started"
    request_id = new_id()
    payload = pack(request(store.keys.xyz_reply(request_id), time.time() + TIMEOUT_S))
    message = queue_message(task, routes.GDAL, request_id, (payload,), shown)
    await store.redis.lpush(celery_queue_key(routes.GDAL), message)
    answer = await store.redis.blpop([store.keys.xyz_reply(request_id)], timeout=TIMEOUT_S)
    return None if answer is None else bytes(answer[1])


def _headers(etag: str, source: str) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": f"private, max-age={MAX_AGE_S}", "X-Geogate-Tile": source}


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Add the tile route to `server`."""
    routes_ = TileRoutes(runtime)
    server.custom_route(TILE_PATH, methods=["GET", "OPTIONS"])(routes_.tile)
