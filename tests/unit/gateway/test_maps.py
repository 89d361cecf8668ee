"""The interactive map's gateway side: `GET /maps/layer` through the real app and Redis with the worker's own
`serve_layer` behind it (the stand-in of `test_xyz`), the MCP App `map_image` names, and the map routes' CORS."""

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import numpy as np
import pyogrio
import pytest
import redis.asyncio as aredis
import shapely
from mcp.types import CallToolResult

from gateway.map_tickets import HEADER, TTL_S, Tickets
from gateway.maps import APP_META, origin, with_app
from gateway.server import build_server
from geogate.settings import SecuritySettings, Settings
from schemas.maplayer import MAX_FEATURES
from schemas.tools.maps import MAP_APP_URI
from tests.unit.gateway.test_xyz import Stack, stack, write_cog

LAYER = "/maps/layer"
ONE_DEGREE_M = 111_319.49079327357
"""One degree of longitude at the equator in EPSG:3857 metres."""


@pytest.fixture
def served(redis_url: str, tmp_path: Path) -> Iterator[Stack]:
    yield from stack(redis_url, tmp_path)


def write_points(path: Path, xy: list[tuple[float, float]], crs: str = "EPSG:3857", note: str = "") -> None:
    names = np.array([f"well {n}{note}" for n in range(len(xy))], dtype=object)
    pyogrio.raw.write(
        path,
        geometry=shapely.to_wkb(shapely.points(xy)),
        field_data=[names],
        fields=["name"],
        geometry_type="Point",
        crs=crs,
        driver="GPKG",
        layer="wells",
    )


def test_a_vector_layer_comes_back_as_geojson_in_degrees(served: Stack) -> None:
    write_points(served.workspace / "wells.gpkg", [(ONE_DEGREE_M, 0.0), (2 * ONE_DEGREE_M, 0.0)])

    answer = served.client.get(LAYER, params={"path": "wells.gpkg"})

    assert answer.status_code == 200
    layer = answer.json()
    assert (layer["kind"], layer["name"], layer["features"]) == ("vector", "wells", 2)
    first = layer["geojson"]["features"][0]
    assert first["properties"]["name"] == "well 0"
    assert first["geometry"]["coordinates"] == pytest.approx([1.0, 0.0], abs=1e-9)
    assert layer["bounds"] == pytest.approx([1.0, 0.0, 2.0, 0.0], abs=1e-9)
    assert served.renders == ["ok"]


def test_a_raster_layer_says_its_bounds_in_degrees_its_bands_and_a_stretch(served: Stack) -> None:
    write_cog(served.workspace / "dem.tif")  # 512 pixels of 100 m east and south of (0, 0), values 0..1022

    layer = served.client.get(LAYER, params={"path": "dem.tif"}).json()

    west, south, east, north = layer["bounds"]
    assert (west, north) == pytest.approx((0.0, 0.0), abs=1e-9)
    assert east == pytest.approx(51_200 / ONE_DEGREE_M, rel=1e-6) and -0.47 < south < -0.45
    assert (layer["kind"], layer["bands"]) == ("raster", 1)
    rows, cols = np.mgrid[0:512, 0:512]
    assert layer["rescale"] == pytest.approx(np.percentile(rows + cols, [2, 98]), rel=0.01)


def test_a_layer_over_the_feature_bound_is_refused_whole(served: Stack) -> None:
    write_points(served.workspace / "many.gpkg", [(float(n), 0.0) for n in range(MAX_FEATURES + 1)])

    answer = served.client.get(LAYER, params={"path": "many.gpkg"})

    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "limit.features")


def test_a_layer_over_the_byte_bound_is_refused_whole(served: Stack) -> None:
    write_points(served.workspace / "long.gpkg", [(float(n), 0.0) for n in range(MAX_FEATURES)], note="x" * 1000)

    answer = served.client.get(LAYER, params={"path": "long.gpkg"})

    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "limit.bytes")


@pytest.mark.parametrize("path", ["/etc/hostname", "../outside.gpkg"])
def test_a_path_outside_the_workspace_is_403_and_reaches_no_worker(served: Stack, path: str) -> None:
    answer = served.client.get(LAYER, params={"path": path})

    assert (answer.status_code, answer.json()["error"]["code"]) == (403, "path.outside_workspace")
    assert served.renders == []


def test_a_vrt_reading_a_file_outside_the_workspace_is_refused_by_the_worker(served: Stack) -> None:
    write_points(served.workspace.parent / "secret.gpkg", [(0.0, 0.0)])
    vrt = f'<OGRVRTDataSource><OGRVRTLayer name="wells"><SrcDataSource>{served.workspace.parent / "secret.gpkg"}'
    (served.workspace / "wells.vrt").write_text(vrt + "</SrcDataSource></OGRVRTLayer></OGRVRTDataSource>")

    answer = served.client.get(LAYER, params={"path": "wells.vrt"})

    assert (answer.status_code, answer.json()["error"]["code"]) == (403, "path.outside_workspace")
    assert "geojson" not in answer.text


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"path": "missing.gpkg"}, 404, "path.not_found"),
        ({"path": "notes.txt"}, 422, "gdal.not_geospatial"),
        ({}, 400, "arguments.invalid"),
    ],
)
def test_a_layer_that_cannot_be_read_is_a_clear_4xx(
    served: Stack, params: dict[str, str], status: int, code: str
) -> None:
    (served.workspace / "notes.txt").write_text("not a layer")

    answer = served.client.get(LAYER, params=params)

    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)


def test_with_authentication_on_a_layer_needs_the_read_scope_and_a_preflight_needs_no_token(
    redis_url: str, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("viewer viewer-token-123456 read\nwriter writer-token-123456 write\n")
    for served in stack(redis_url, tmp_path, SecuritySettings(auth_tokens_file=tokens)):
        write_points(served.workspace / "wells.gpkg", [(0.0, 0.0)])
        params = {"path": "wells.gpkg"}
        frame = {"Origin": "http://127.0.0.1:5173"}

        anonymous = served.client.get(LAYER, params=params)
        writer = served.client.get(LAYER, params=params, headers={"Authorization": "Bearer writer-token-123456"})
        viewer = served.client.get(
            LAYER, params=params, headers={"Authorization": "Bearer viewer-token-123456", **frame}
        )
        preflight = served.client.options(
            LAYER,
            headers={
                **frame,
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "authorization",
            },
        )

        assert (anonymous.status_code, writer.status_code, viewer.status_code) == (401, 403, 200)
        assert viewer.headers["access-control-allow-origin"] == "*"
        assert (
            preflight.status_code == 200
            and "authorization" in preflight.headers["access-control-allow-headers"].lower()
        )


def issued(redis_url: str, settings: Settings, wanted: list[tuple[str, float]]) -> list[str]:
    """Tickets for the viewer, each for one path, issued that many seconds from now."""

    async def main() -> list[str]:
        async with aredis.Redis.from_url(redis_url) as client:
            tickets = Tickets(client, settings.keys())
            return [await tickets.issue("viewer", [path], time.time() + shift) for path, shift in wanted]

    return anyio.run(main)


def read(served: Stack, path: str, ticket: str) -> int:
    return served.client.get(LAYER, params={"path": path}, headers={HEADER: ticket}).status_code


def test_a_map_ticket_reads_its_own_layers_and_nothing_else(redis_url: str, tmp_path: Path) -> None:
    """A host's frame holds no bearer token: the ticket of a map_image result admits reads of that map's paths."""
    tokens = tmp_path / "tokens"
    tokens.write_text("viewer viewer-token-123456 read\n")
    for served in stack(redis_url, tmp_path, SecuritySettings(auth_tokens_file=tokens)):
        write_points(served.workspace / "wells.gpkg", [(0.0, 0.0)])
        write_points(served.workspace / "other.gpkg", [(0.0, 0.0)])
        tickets = issued(
            redis_url, served.settings, [("wells.gpkg", 0.0), ("wells.gpkg", -TTL_S - 1), ("other.gpkg", 0.0)]
        )
        ticket, expired, other = tickets
        forged = f"{other.partition('.')[0]}.{ticket.partition('.')[2]}"  # another map's claims, this one's signature

        assert read(served, "wells.gpkg", ticket) == 200
        assert read(served, "other.gpkg", ticket) == read(served, "wells.gpkg", expired) == 401
        assert read(served, "other.gpkg", forged) == 401 and read(served, "other.gpkg", other) == 200
        assert served.client.get("/mcp", headers={HEADER: ticket}).status_code == 401  # a map's reads, nothing more


def test_the_view_page_carries_hostile_layer_names_as_text(served: Stack) -> None:
    hostile = '"><script>alert(1)</script>'

    page = served.client.get("/maps/view", params={"layer": hostile})

    assert page.status_code == 200 and "<script>alert" not in page.text
    [attribute] = re.findall(r'data-layers="([^"]*)"', page.text)
    assert json.loads(html.unescape(attribute)) == [hostile]  # the page reads back the very name, as data


def test_an_origin_the_gateway_does_not_admit_gets_no_map(served: Stack) -> None:
    answer = served.client.get("/maps/static/map.js", headers={"Origin": "https://evil.example"})

    assert answer.status_code == 403


def test_map_image_names_the_map_app_and_the_app_loads_only_from_the_gateway() -> None:
    settings = Settings(redis_url="redis://unused", port=8123)
    server, _ = build_server(settings)

    tools = {tool.name: tool for tool in anyio.run(server.list_tools)}
    [contents] = anyio.run(server.read_resource, MAP_APP_URI)

    assert tools["map_image"].meta == {"ui": {"resourceUri": MAP_APP_URI}}
    assert [name for name, tool in tools.items() if tool.meta and "ui" in tool.meta] == ["map_image"]
    assert contents.mime_type == "text/html;profile=mcp-app"
    gateway = origin(settings)
    assert gateway == "http://127.0.0.1:8123"
    assert contents.meta["ui"]["csp"] == {"connectDomains": [gateway], "resourceDomains": [gateway]}
    urls = re.findall(r'(?:src|href)="([^"]+)"', str(contents.content))
    assert urls and all(url.startswith(gateway + "/maps/static/") or url.startswith("data:") for url in urls)


def test_a_map_image_result_tells_its_app_the_workspace_layers_and_with_auth_a_ticket_for_them(
    redis_url: str, tmp_path: Path
) -> None:
    """Remote layers (read by range requests) are not the gateway's to serve; the ticket names the local ones."""
    settings = Settings(redis_url=redis_url, prefix="t-ticket", security=SecuritySettings(auth_tokens_file=tmp_path))
    layers = [
        {"kind": "raster", "path": "/ws/dem.tif", "crs": None, "drawn": True},
        {"kind": "raster", "path": "/vsicurl/https://cogs.example/x.tif", "crs": None, "drawn": True},
        {"kind": "vector", "path": "/ws/wells.gpkg", "layer": "wells", "crs": None, "drawn": True},
    ]
    result = CallToolResult(content=[], structured_content={"layers": layers}, _meta={"io.geogate/call": {}})  # type: ignore[call-arg]

    async def main() -> tuple[dict[str, Any], list[str | None]]:
        async with aredis.Redis.from_url(redis_url) as client:
            runtime = SimpleNamespace(settings=settings, store=SimpleNamespace(redis=client, keys=settings.keys()))
            said = (await with_app(runtime, result)).meta  # type: ignore[arg-type]
            tickets = Tickets(client, settings.keys())
            paths = ["/ws/wells.gpkg", "/ws/dem.tif", "/vsicurl/https://cogs.example/x.tif"]
            return said, [await tickets.holder(said[APP_META]["ticket"], path) for path in paths]

    said, holders = anyio.run(main)

    assert said["io.geogate/call"] == {}
    assert said[APP_META]["layers"] == [{"path": "/ws/dem.tif"}, {"path": "/ws/wells.gpkg", "layer": "wells"}]
    assert holders == ["anonymous", "anonymous", None]
