"""`GET /tiles/{z}/{x}/{y}.png` through the real gateway app and Redis, with a worker stand-in that takes the map's
messages off the gdal queue and runs the worker's own `serve_tile` or `serve_layer` (the Celery transport is all it
replaces)."""

import io
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import rasterio
import redis
from PIL import Image
from rasterio.transform import from_origin
from rio_tiler.colormap import cmap
from rio_tiler.io import Reader
from starlette.testclient import TestClient

from gateway.app import build_app
from geogate.calls.keys import celery_queue_key
from geogate.queue.message import envelope_args
from geogate.settings import SecuritySettings, Settings
from schemas import routes
from schemas.ids import new_id
from workers.maps.layer import serve_layer
from workers.maps.xyz import serve_tile

TILE = "/tiles/8/128/128.png"
"""The z=8 tile just south-east of (0, 0) in Web Mercator, which holds the whole test raster."""
STYLE = {"rescale": "0,1000", "colormap": "viridis"}
SERVE = {routes.RENDER_TILE: serve_tile, routes.MAP_LAYER: serve_layer}
"""What the worker runs for each task on the gdal queue that is not a call."""


def write_cog(path: Path, scale: float = 1.0) -> None:
    """A 512² float32 DEM-like raster in EPSG:3857, 100 m pixels from (0, 0), tiled with overviews."""
    rows, cols = np.mgrid[0:512, 0:512]
    data = ((rows + cols) * scale).astype("float32")
    profile = {"driver": "GTiff", "width": 512, "height": 512, "count": 1, "dtype": "float32", "crs": "EPSG:3857"}
    profile |= {"transform": from_origin(0, 0, 100, 100), "tiled": True, "blockxsize": 256, "blockysize": 256}
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data, 1)
        dst.build_overviews([2, 4])


@dataclass
class Renders:
    """What the worker stand-in drew, read under the lock it holds from taking a request until it has noted the
    reply: the gateway has an answer only once the reply is pushed, inside that span."""

    done: list[str]
    serving: threading.Lock

    def __eq__(self, other: object) -> bool:
        with self.serving:
            return self.done == other


@dataclass
class Stack:
    client: TestClient
    workspace: Path
    renders: Renders
    settings: Settings


def worker(url: str, roots: list[Path], renders: Renders, stop: threading.Event) -> None:
    client = redis.Redis.from_url(url)
    while not stop.is_set():
        popped = client.blpop([celery_queue_key(routes.GDAL)], timeout=0.2)
        if popped is None:
            continue
        envelope = json.loads(popped[1])
        args = envelope_args(envelope)
        assert args is not None
        with renders.serving:
            reply = SERVE[envelope["headers"]["task"]](client, args[0], roots)
            renders.done.append(reply.status if reply else "skipped")


def stack(redis_url: str, tmp_path: Path, security: SecuritySettings | None = None) -> Iterator[Stack]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(
        redis_url=redis_url,
        prefix=f"t{new_id()[-8:]}",
        workspaces=str(workspace),
        data_dir=tmp_path / "data",
        security=security or SecuritySettings(),
    )
    renders = Renders([], threading.Lock())
    stop = threading.Event()
    thread = threading.Thread(target=worker, args=(redis_url, settings.workspace_roots(), renders, stop), daemon=True)
    thread.start()
    try:
        with TestClient(build_app(settings), base_url="http://127.0.0.1") as client:
            yield Stack(client, workspace, renders, settings)
    finally:
        stop.set()
        thread.join(timeout=5)


@pytest.fixture
def served(redis_url: str, tmp_path: Path) -> Iterator[Stack]:
    yield from stack(redis_url, tmp_path)


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def expected(path: Path, z: int, x: int, y: int) -> np.ndarray:
    """The tile as rio-tiler draws it with the same style, computed here."""
    with Reader(str(path)) as src:
        image = src.tile(x, y, z, tilesize=256)
    image.rescale(in_range=[(0.0, 1000.0)])
    return pixels(image.render(img_format="PNG", colormap=cmap.get("viridis")))


def test_a_tile_where_the_raster_is_a_256_png_with_rio_tilers_pixels(served: Stack) -> None:
    write_cog(served.workspace / "dem.tif")

    answer = served.client.get(TILE, params={"path": "dem.tif", **STYLE})

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "image/png"
    got = pixels(answer.content)
    assert got.shape == (256, 256, 4)
    assert np.array_equal(got, expected(served.workspace / "dem.tif", 8, 128, 128))
    assert got[..., 3].any() and not got[..., 3].all()  # the raster covers part of the tile; the rest is clear


def test_a_tile_outside_the_raster_is_204_no_content(served: Stack) -> None:
    write_cog(served.workspace / "dem.tif")

    answer = served.client.get("/tiles/8/10/10.png", params={"path": "dem.tif", **STYLE})

    assert answer.status_code == 204
    assert answer.content == b""


def test_a_second_fetch_comes_from_the_cache_and_a_rewritten_file_is_drawn_again(served: Stack) -> None:
    dem = served.workspace / "dem.tif"
    write_cog(dem)
    params = {"path": "dem.tif", **STYLE}

    first = served.client.get(TILE, params=params)
    second = served.client.get(TILE, params=params)
    assert (first.headers["x-geogate-tile"], second.headers["x-geogate-tile"]) == ("miss", "hit")
    assert second.content == first.content and served.renders == ["ok"]

    revalidated = served.client.get(TILE, params=params, headers={"If-None-Match": first.headers["etag"]})
    assert revalidated.status_code == 304 and served.renders == ["ok"]

    write_cog(dem.with_name("new.tif"), scale=2.0)
    dem.with_name("new.tif").replace(dem)
    third = served.client.get(TILE, params=params)
    assert third.headers["x-geogate-tile"] == "miss" and third.headers["etag"] != first.headers["etag"]
    assert np.array_equal(pixels(third.content), expected(dem, 8, 128, 128))
    assert served.renders == ["ok", "ok"]


@pytest.mark.parametrize("path", ["/etc/hostname", "../outside.tif", "sub/../../outside.tif"])
def test_a_path_outside_the_workspace_is_403_and_reaches_no_worker(served: Stack, path: str) -> None:
    (served.workspace.parent / "outside.tif").write_bytes(b"x")

    answer = served.client.get(TILE, params={"path": path})

    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "path.outside_workspace"
    assert served.renders == []


def test_a_symlink_out_of_the_workspace_is_403(served: Stack) -> None:
    write_cog(served.workspace.parent / "secret.tif")
    (served.workspace / "link.tif").symlink_to(served.workspace.parent / "secret.tif")

    answer = served.client.get(TILE, params={"path": "link.tif"})

    assert answer.status_code == 403


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"path": "missing.tif"}, 404, "path.not_found"),
        ({"path": "notes.tif"}, 422, "raster.unreadable"),
        ({"path": "dem.tif", "bands": "4"}, 400, "band.out_of_range"),
        ({"path": "dem.tif", "colormap": "no_such_map"}, 400, "option.unsupported"),
        ({"path": "dem.tif", "rescale": "5,1"}, 400, "arguments.invalid"),
        ({"path": "dem.tif", "bands": "x"}, 400, "arguments.invalid"),
        ({}, 400, "arguments.invalid"),
    ],
)
def test_a_request_that_cannot_be_drawn_is_a_clear_4xx(
    served: Stack, params: dict[str, str], status: int, code: str
) -> None:
    write_cog(served.workspace / "dem.tif")
    (served.workspace / "notes.tif").write_text("not a raster")

    answer = served.client.get(TILE, params=params)

    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)


def test_a_tile_off_the_grid_is_400(served: Stack) -> None:
    answer = served.client.get("/tiles/2/4/0.png", params={"path": "dem.tif"})

    assert answer.status_code == 400


def test_with_authentication_on_a_tile_needs_a_token_with_the_read_scope(redis_url: str, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("viewer viewer-token-123456 read\nwriter writer-token-123456 write\n")
    for served in stack(redis_url, tmp_path, SecuritySettings(auth_tokens_file=tokens)):
        write_cog(served.workspace / "dem.tif")
        params = {"path": "dem.tif", **STYLE}

        anonymous = served.client.get(TILE, params=params)
        writer = served.client.get(TILE, params=params, headers={"Authorization": "Bearer writer-token-123456"})
        viewer = served.client.get(TILE, params=params, headers={"Authorization": "Bearer viewer-token-123456"})

        assert (anonymous.status_code, writer.status_code, viewer.status_code) == (401, 403, 200)
