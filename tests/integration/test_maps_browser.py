"""The interactive map in headless Chromium (Debian's, driven by Playwright) on the real stack: the page at
/maps/view, the same page as the MCP App a host shows beside `map_image` (SEP-1865, through a host page of another
origin that speaks the bridge), and a call's outputs on /ops. Each must draw raster tiles (pixels change when the
tiles are shown), open a popup on a known feature, and fetch nothing from outside the gateway."""

import asyncio
import io
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np
import pyogrio
import pytest
import rasterio
import shapely
from mcp import Client
from PIL import Image
from playwright.sync_api import Browser, Frame, Page, Response, expect, sync_playwright
from rasterio.transform import from_origin

from gateway.map_tickets import HEADER
from schemas.events import ToolRequested, ToolSucceeded
from schemas.tools.maps import MAP_APP_URI
from tests.integration.conftest import Stack, start_gateway, stop
from tests.mcp_http import call_tool, read_resource
from tests.support import free_port

pytestmark = pytest.mark.integration

T = TypeVar("T")

CHROMIUM = "/usr/bin/chromium"
VIEWER = "viewer-token-for-the-map-1234"
"""A token with the `read` scope, for the gateway with authentication on."""
RASTER_BOX = (10.0, 45.0, 10.1, 45.05)
WELL = ("south well", 10.02, 45.01)
"""A known feature of `maps/sites.gpkg`: its name, longitude and latitude."""
BACKGROUND = (238, 240, 242)
HOST_SCRIPT = """
window.received = [];
window.addEventListener("message", (event) => {
  const frame = document.getElementById("app").contentWindow;
  const message = event.data;
  if (event.source !== frame) return;
  window.received.push(message.method || "response");
  const send = (m) => frame.postMessage({ jsonrpc: "2.0", ...m }, "*");
  if (message.method === "ui/initialize") {
    send({ id: message.id, result: { protocolVersion: "2026-01-26", hostInfo: { name: "test-host", version: "0" },
      hostCapabilities: {}, hostContext: { displayMode: "inline" } } });
  } else if (message.method === "ui/notifications/initialized") {
    send({ method: "ui/notifications/tool-input", params: { arguments: window.toolCall.arguments } });
    send({ method: "ui/notifications/tool-result", params: window.toolCall.result });
  }
});
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is not installed; `make test` installs it with apt")
    args = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]  # WebGL without a GPU
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def layers(stack: Stack) -> dict[str, str]:
    """A 200×100 raster over `RASTER_BOX` (EPSG:4326) and two wells on it."""
    folder = stack.workspace / "maps"
    folder.mkdir(exist_ok=True)
    west, _, _, north = RASTER_BOX
    data = np.tile(np.linspace(0, 250, 200, dtype="float32"), (100, 1))[np.newaxis]
    profile = {"driver": "GTiff", "width": 200, "height": 100, "count": 1, "dtype": "float32", "crs": "EPSG:4326"}
    with rasterio.open(folder / "area.tif", "w", **profile, transform=from_origin(west, north, 0.0005, 0.0005)) as dst:
        dst.write(data)
    wells = shapely.points([[WELL[1], WELL[2]], [10.08, 45.04]])
    pyogrio.raw.write(
        folder / "sites.gpkg",
        geometry=shapely.to_wkb(wells),
        field_data=[np.array([WELL[0], "north well"], dtype=object)],
        fields=["name"],
        geometry_type="Point",
        crs="EPSG:4326",
        driver="GPKG",
        layer="sites",
    )
    return {"raster": "maps/area.tif", "vector": "maps/sites.gpkg"}


HOST_PAGE = (
    "<!doctype html><html><body><iframe id='app' sandbox='allow-scripts allow-same-origin' "
    f"style='width:900px;height:600px;border:0'></iframe><script>{HOST_SCRIPT}</script></body></html>"
).encode()


def host_csp(declared: dict[str, list[str]]) -> str:
    """The policy a host puts on the App's frame from the resource's `_meta.ui.csp`, as the extension's reference
    host builds it (`examples/basic-host`): its resource and connect domains, workers from blob:, nothing else."""
    resources, connects = " ".join(declared.get("resourceDomains", [])), " ".join(declared.get("connectDomains", []))
    return "; ".join(
        [
            "default-src 'self' 'unsafe-inline'",
            f"script-src 'self' 'unsafe-inline' 'unsafe-eval' blob: data: {resources}",
            f"style-src 'self' 'unsafe-inline' blob: data: {resources}",
            f"img-src 'self' data: blob: {resources}",
            f"font-src 'self' data: blob: {resources}",
            f"connect-src 'self' {connects}",
            f"worker-src 'self' blob: {resources}",
            "frame-src 'none'",
            "object-src 'none'",
            "base-uri 'none'",
        ]
    )


class HostServer(ThreadingHTTPServer):
    csp = "default-src 'none'"
    """The policy the host page (and so the App's frame, which inherits it) runs under."""


class HostPage(BaseHTTPRequestHandler):
    server: HostServer

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Security-Policy", self.server.csp)
        self.end_headers()
        self.wfile.write(HOST_PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def host() -> Iterator[HostServer]:
    """A host's page at an origin other than the gateway's (a port of its own), whose frame shows the MCP App."""
    server = HostServer(("127.0.0.1", 0), HostPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()


def recorded(page: Page) -> tuple[list[str], list[Response]]:
    urls: list[str] = []
    tiles: list[Response] = []
    page.on("request", lambda request: urls.append(request.url))
    page.on("response", lambda response: tiles.append(response) if "/tiles/" in response.url else None)
    return urls, tiles


def idle(target: Page | Frame) -> None:
    target.evaluate("() => new Promise((done) => { geogateMap.once('idle', done); geogateMap.triggerRepaint(); })")


def pixel_at(target: Page | Frame, lon: float, lat: float) -> tuple[int, int, int]:
    x, y = target.evaluate(
        "([lon, lat]) => { const p = geogateMap.project([lon, lat]); return [p.x, p.y]; }", [lon, lat]
    )
    shot = Image.open(io.BytesIO(target.locator("#map").screenshot())).convert("RGB")
    return shot.getpixel((round(x), round(y)))


def check_tiles(target: Page | Frame, tiles: list[Response]) -> None:
    """Tiles are asked for and drawn: the raster's pixels differ from the background once it is shown, not before,
    and not at opacity 0."""
    target.locator('#map[data-state="ready"]').wait_for(timeout=30_000)
    raster = target.locator('#map-layers li[data-kind="raster"] input[type="checkbox"]').first
    raster.uncheck()
    idle(target)
    hidden = pixel_at(target, 10.05, 45.03)
    raster.check()
    idle(target)
    shown = pixel_at(target, 10.05, 45.03)
    assert max(abs(a - b) for a, b in zip(hidden, BACKGROUND, strict=True)) <= 3, hidden
    assert max(abs(a - b) for a, b in zip(shown, BACKGROUND, strict=True)) > 30, shown
    assert [r for r in tiles if r.status == 200 and r.headers.get("content-type") == "image/png"]
    target.locator('#map-layers li[data-kind="raster"] input[type="range"]').first.fill("0")
    idle(target)
    faded = pixel_at(target, 10.05, 45.03)
    assert max(abs(a - b) for a, b in zip(faded, BACKGROUND, strict=True)) <= 3, faded  # opacity 0: the background


def check_popup(target: Page | Frame) -> None:
    """A click on the known well's pixel opens a popup with its name."""
    target.locator('#map[data-state="ready"]').wait_for(timeout=30_000)
    idle(target)
    x, y = target.evaluate("([lon, lat]) => { const p = geogateMap.project([lon, lat]); return [p.x, p.y]; }", WELL[1:])
    target.locator("#map").click(position={"x": x, "y": y})
    expect(target.locator(".maplibregl-popup")).to_contain_text(WELL[0])


def only_gateway(urls: list[str], base: str, allowed: tuple[str, ...] = ()) -> None:
    fetched = [u for u in urls if not u.startswith(("blob:", "data:", "about:")) and u not in allowed]
    assert fetched and all(u.startswith(base + "/") for u in fetched), [u for u in fetched if not u.startswith(base)]


def test_the_map_page_draws_tiles_and_a_popup_from_the_gateway_alone(
    stack: Stack, browser: Browser, layers: dict[str, str]
) -> None:
    base = stack.url.removesuffix("/mcp")
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    urls, tiles = recorded(page)
    page.goto(f"{base}/maps/view?layer={layers['raster']}&layer={layers['vector']}")

    check_tiles(page, tiles)
    check_popup(page)

    assert page.locator("#map-layers li").count() == 2
    only_gateway(urls, base)
    page.close()


def off_the_loop(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run an MCP client beside Playwright's sync API, which holds this thread's event loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result(timeout=120)


def map_call(url: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """`map_image` called over MCP: its result, the `ui://` resource its tool names, and that resource's HTML."""

    async def main() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with Client(url) as client:
            assert "io.modelcontextprotocol/ui" in (client.server_capabilities.extensions or {})
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            uri = tools["map_image"].meta["ui"]["resourceUri"]
            result = await client.call_tool("map_image", arguments)
            contents = (await client.read_resource(uri)).contents[0]
            resource = contents.model_dump(mode="json", by_alias=True, exclude_none=True)
            return result.model_dump(mode="json", by_alias=True, exclude_none=True), resource, contents.text

    return off_the_loop(main)


def test_map_image_names_an_mcp_app_that_a_host_of_another_origin_shows_with_its_layers(
    stack: Stack, browser: Browser, layers: dict[str, str], host: HostServer
) -> None:
    base = stack.url.removesuffix("/mcp")
    arguments = {"layers": [{"kind": "raster", "uri": layers["raster"]}, {"kind": "vector", "uri": layers["vector"]}]}
    result, resource, html = map_call(stack.url, arguments)
    assert not result["isError"] and "image" in [block["type"] for block in result["content"]]  # the PNG, as before
    assert resource["mimeType"] == "text/html;profile=mcp-app"
    assert resource["_meta"]["ui"]["csp"] == {"connectDomains": [base], "resourceDomains": [base]}

    shown_in_host(browser, host, base, resource, html, {"arguments": arguments, "result": result})


def shown_in_host(
    browser: Browser, host: HostServer, base: str, resource: dict[str, Any], html: str, call: dict[str, Any]
) -> None:
    """The App in the host's frame, under the policy its resource declares, given the call: it draws its tiles and
    opens a popup, having fetched from the gateway alone."""
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    host.csp = host_csp(resource["_meta"]["ui"]["csp"])
    host_page = f"http://127.0.0.1:{host.server_address[1]}/host.html"
    urls, tiles = recorded(page)
    page.goto(host_page)
    page.evaluate(
        "([call, html]) => { window.toolCall = call; document.getElementById('app').srcdoc = html; }", [call, html]
    )
    frame = page.locator("#app").element_handle().content_frame()
    assert frame is not None

    check_tiles(frame, tiles)
    check_popup(frame)

    assert page.evaluate("window.received")[:2] == ["ui/initialize", "ui/notifications/initialized"]
    only_gateway(urls, base, allowed=(host_page,))
    page.close()


def test_with_authentication_on_the_app_reads_its_map_with_the_ticket_its_result_carries(
    stack: Stack, browser: Browser, layers: dict[str, str], host: HostServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tokens = tmp_path_factory.mktemp("maps-auth") / "tokens"
    tokens.write_text(f"viewer {VIEWER} read\n")
    port = free_port()
    gateway = start_gateway({**stack.env, "GEOGATE_AUTH_TOKENS_FILE": str(tokens)}, port)
    base, raster = f"http://127.0.0.1:{port}", str(stack.workspace / layers["raster"])
    arguments = {"layers": [{"kind": "raster", "uri": layers["raster"]}, {"kind": "vector", "uri": layers["vector"]}]}
    try:
        with httpx.Client(timeout=60) as http:
            result = call_tool(http, f"{base}/mcp", "map_image", arguments, token=VIEWER).result
            [resource] = read_resource(http, f"{base}/mcp", MAP_APP_URI, token=VIEWER).result["contents"]
            ticket = result["_meta"]["io.geogate/map"]["ticket"]
            assert http.get(f"{base}/maps/layer", params={"path": raster}).status_code == 401
            assert http.get(f"{base}/maps/layer", params={"path": raster}, headers={HEADER: ticket}).status_code == 200
        shown_in_host(browser, host, base, resource, resource["text"], {"arguments": arguments, "result": result})
    finally:
        stop(gateway)


def outputs_calls(url: str, layers: dict[str, str]) -> None:
    async def main() -> None:
        async with Client(url) as client:
            for tool, extra in (
                ("raster_convert", {"uri": layers["raster"], "output": "maps/area_cog.tif", "driver": "COG"}),
                ("vector_convert", {"uri": layers["vector"], "output": "maps/sites.geojson", "driver": "GeoJSON"}),
            ):
                result = await client.call_tool(tool, extra)
                assert not result.is_error, result.content[0]

    off_the_loop(main)


def test_a_calls_page_on_ops_shows_its_outputs_on_the_map(
    stack: Stack, browser: Browser, layers: dict[str, str]
) -> None:
    base = stack.url.removesuffix("/mcp")
    outputs_calls(stack.url, layers)
    tools: dict[str, str] = {}
    done: dict[str, str] = {}
    for stored in stack.store().read("calls"):
        data = stored.event.data
        if isinstance(data, ToolRequested):
            tools[data.call_id] = data.tool
        elif isinstance(data, ToolSucceeded) and data.outputs:
            done[tools[data.call_id]] = data.call_id

    for tool in ("raster_convert", "vector_convert"):
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        urls, tiles = recorded(page)
        page.goto(f"{base}/ops/calls/{done[tool]}")
        if tool == "raster_convert":
            check_tiles(page, tiles)
        else:
            check_popup(page)
        only_gateway(urls, base)
        page.close()
