"""The interactive map: `GET /maps/layer?path=…` (one workspace layer, read by a worker, for the map page), the map
page at `/maps/view?layer=…` and as the MCP App `ui://geogate/map` (SEP-1865) that `map_image` names, and the page's
scripts at `/maps/static/…`.

The layer route is authorised like `/tiles` (the `read` scope, `gateway.security.wiring`); the page and its scripts
hold no data and stay open, so a host's sandboxed frame can load them. Like a tile, a layer is a read the event log
never sees (`schemas.maplayer`).
"""

from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp.server.apps import Apps, ResourceCsp
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response

from gateway.identity import caller
from gateway.map_tickets import Tickets
from gateway.ops.render import render
from gateway.security.wiring import resource_url
from gateway.xyz import MAX_AGE_S, TIMEOUT_S, TileRefused, ask_worker, workspace_file
from geogate.settings import Settings
from schemas import routes
from schemas.maplayer import LayerQuery, LayerReply, LayerRequest
from schemas.tools.maps import MAP_APP_URI
from schemas.xyz import unpack

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

STATIC = files("gateway.ops").joinpath("static")
SERVED = frozenset(
    {"map.js", "map.css", "vendor/maplibre-gl.mjs", "vendor/maplibre-gl-worker.mjs", "vendor/maplibre-gl.css"}
)
"""The only files `/maps/static/` serves: the page's own and MapLibre GL JS (from npm, `make ops-assets`)."""
MAX_VIEW_LAYERS = 8
"""Layers `/maps/view` draws, as `map_image` does."""
APP_META = "io.geogate/map"
"""The `_meta` key of a `map_image` result that tells its MCP App what to draw: the workspace layers, and with
authentication on a read ticket for them (`gateway.map_tickets`)."""


def origin(settings: Settings) -> str:
    """The gateway's origin as clients reach it (from `GEOGATE_AUTH_RESOURCE_URL`, else the bind)."""
    parts = urlsplit(resource_url(settings))
    return f"{parts.scheme}://{parts.netloc}"


def page(base: str, layers: list[str]) -> str:
    """The map page; `base` is the gateway's origin when the page is not served by the gateway itself."""
    return render("map.html", base=base, layers=layers)


def map_app(settings: Settings) -> Apps:
    """The MCP Apps extension with the map page as `ui://geogate/map`; the host's sandbox may load scripts from and
    connect to the gateway's origin, nothing else."""
    apps = Apps()
    gateway = origin(settings)
    csp = ResourceCsp(connect_domains=[gateway], resource_domains=[gateway])
    description = "An interactive map of the layers of a map_image call: rasters as tiles, vectors with popups."
    apps.add_html_resource(
        MAP_APP_URI, page(gateway, []), name="map", title="Map", description=description, csp=csp, prefers_border=True
    )
    return apps


def _local(layer: dict[str, Any]) -> bool:
    path = layer.get("path")
    return isinstance(path, str) and path.startswith("/") and not path.startswith("/vsi")


async def with_app(
    runtime: "Gateway", result: CallToolResult | InputRequiredResult
) -> CallToolResult | InputRequiredResult:
    """A `map_image` result with what its MCP App draws in `_meta` (`APP_META`); other results as they are."""
    structured = getattr(result, "structured_content", None)
    if not isinstance(result, CallToolResult) or result.is_error or not isinstance(structured, dict):
        return result
    drawn = [layer for layer in structured.get("layers", []) if isinstance(layer, dict) and _local(layer)]
    layers = [{"path": layer["path"]} | ({"layer": layer["layer"]} if layer.get("layer") else {}) for layer in drawn]
    if not layers:
        return result
    said: dict[str, Any] = {"layers": layers}
    if runtime.settings.security.auth_enabled:
        assert runtime.store is not None, "gateway not started"
        tickets = Tickets(runtime.store.redis, runtime.store.keys)
        said["ticket"] = await tickets.issue(caller(), [layer["path"] for layer in layers])
    return result.model_copy(update={"meta": {**(result.meta or {}), APP_META: said}})


def layer_query(request: Request) -> LayerQuery:
    """Raises: TileRefused: `arguments.invalid`, naming the parameter."""
    q = request.query_params
    try:
        return LayerQuery(path=q.get("path", ""), layer=q.get("layer") or None)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise TileRefused("arguments.invalid", f"{'.'.join(map(str, error['loc']))}: {error['msg']}") from exc


class MapRoutes:
    """The map's routes, bound to the gateway runtime."""

    def __init__(self, runtime: "Gateway") -> None:
        self.runtime = runtime

    async def layer(self, request: Request) -> Response:
        try:
            query = layer_query(request)
            workspace_file(query.path, self.runtime.settings.workspace_roots())
            reply = await self._read(query)
        except TileRefused as exc:
            return exc.response()
        if reply.status == "error":
            return TileRefused(reply.code, reply.message).response()
        headers = {"Cache-Control": f"private, max-age={MAX_AGE_S}"}
        return Response(reply.body, media_type="application/json", headers=headers)

    async def _read(self, query: LayerQuery) -> LayerReply:
        shown = f"map layer {query.path!r}"

        def request(reply_to: str, deadline: float) -> LayerRequest:
            return LayerRequest(query=query, reply_to=reply_to, deadline=deadline)

        answer = await ask_worker(self.runtime, routes.MAP_LAYER, request, shown)
        if answer is None:
            raise TileRefused("layer.timeout", f"no worker read {shown} within {TIMEOUT_S:g} s")
        return unpack(LayerReply, answer)

    async def view(self, request: Request) -> Response:
        layers = request.query_params.getlist("layer")[:MAX_VIEW_LAYERS]
        return HTMLResponse(page("", layers))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in SERVED or not STATIC.joinpath(name).is_file():
            return PlainTextResponse(f"no such file: {name} (MapLibre is installed by `make ops-assets`)", 404)
        return FileResponse(str(STATIC.joinpath(name)), headers={"Cache-Control": "max-age=3600"})


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Add the map's routes to `server` (the `ui://` resource comes with the `map_app` extension)."""
    maps = MapRoutes(runtime)
    server.custom_route("/maps/layer", methods=["GET", "OPTIONS"])(maps.layer)
    server.custom_route("/maps/view", methods=["GET"])(maps.view)
    server.custom_route("/maps/static/{name:path}", methods=["GET", "OPTIONS"])(maps.static)
