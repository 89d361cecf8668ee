"""Bench: XYZ map tiles of a COG, Geogate's `GET /tiles/{z}/{x}/{y}.png` against titiler serving the same COG.

Both serve the same 4096² float32 COG (EPSG:3857, deflate, overviews) on this machine, one request at a time, the
same distinct 256² tiles in the same shuffled order, each tile asked of both back to back (who goes first alternates),
with the same style (`rescale=0,1000`, `viridis`). Uncached tiles are each tile's first fetch from Geogate; cached
tiles (Geogate's Redis cache) are reported apart, never mixed in. titiler keeps no tile cache.

Rows: p50 and p99 of uncached tiles, Geogate over titiler (target ≤ 1.0× at p50; p99 reported against the same
target); and the cached p50 over titiler's uncached p50.

titiler runs from its own virtualenv (`--titiler-python`, default `/tmp/titiler-venv/bin/python`), made with
`python -m venv /tmp/titiler-venv && /tmp/titiler-venv/bin/pip install titiler.core uvicorn`.

Run: `.venv/bin/python bench/tiles_xyz.py [--tiles N] [--cached N] [--workers N]`.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import morecantile
import numpy as np
import rasterio
import rasterio.shutil
import rasterio.warp
from rasterio.transform import from_origin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._report import Row, show
from bench._stack import _wait_http, describe, geogate_stack, percentile, processes
from geogate.cli.dev import free_port

SIZE = 4096
PIXEL_M = 30.0
STYLE = {"rescale": "0,1000", "colormap": "viridis"}
TITILER_APP = """
import os, uvicorn
from fastapi import FastAPI
from titiler.core.factory import TilerFactory
app = FastAPI()
app.include_router(TilerFactory().router)
uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
"""


def write_cog(folder: Path) -> Path:
    """A smooth DEM-like surface with noise (so PNGs are not trivially small), as a deflate COG with overviews."""
    rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype("float32")
    data = 500 + 400 * np.sin(rows / 300) * np.cos(cols / 450) + np.random.default_rng(7).normal(0, 20, rows.shape)
    profile = {"driver": "GTiff", "width": SIZE, "height": SIZE, "count": 1, "dtype": "float32", "crs": "EPSG:3857"}
    profile |= {"transform": from_origin(1_000_000, 6_000_000, PIXEL_M, PIXEL_M), "tiled": True}
    plain, cog = folder / "plain.tif", folder / "dem_cog.tif"
    with rasterio.open(plain, "w", **profile) as dst:
        dst.write(data.astype("float32"), 1)
    rasterio.shutil.copy(plain, cog, driver="COG", compress="DEFLATE", overview_resampling="average")
    plain.unlink()
    return cog


def tiles_of(cog: Path, count: int) -> list[morecantile.Tile]:
    """`count` distinct tiles wholly or partly over the raster, from the zooms where a tile holds at most its own
    pixels down to where the raster is a few tiles, shuffled."""
    tms = morecantile.tms.get("WebMercatorQuad")
    tiles = [t for z in range(7, 13) for t in tms.tiles(*_bounds(cog), zooms=[z])]
    random.Random(7).shuffle(tiles)
    return tiles[:count]


def _bounds(cog: Path) -> tuple[float, float, float, float]:
    with rasterio.open(cog) as src:
        return rasterio.warp.transform_bounds(src.crs, "EPSG:4326", *src.bounds)


def timed(client: httpx.Client, url: str, params: dict[str, str]) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    answer = client.get(url, params=params)
    return (time.perf_counter() - start) * 1000, answer


def warm_up(client: httpx.Client, geogate: str, titiler: str, cog: Path, timeout_s: float = 60) -> None:
    """Until a worker answers (the stack's workers take a while to start), on a z=6 tile that is never measured."""
    deadline, answer = time.monotonic() + timeout_s, None
    tile = next(morecantile.tms.get("WebMercatorQuad").tiles(*_bounds(cog), zooms=[6]))
    path = f"{tile.z}/{tile.x}/{tile.y}.png"
    while time.monotonic() < deadline:
        answer = client.get(f"{geogate}/tiles/{path}", params={"path": cog.name, **STYLE})
        if answer.status_code == 200:
            break
        time.sleep(0.5)
    else:
        raise RuntimeError(f"no Geogate worker drew a tile within a minute ({answer and answer.text[:200]})")
    client.get(f"{titiler}/tiles/WebMercatorQuad/{path}", params={"url": str(cog), **_titiler_style()})


def _titiler_style() -> dict[str, str]:
    return {"rescale": STYLE["rescale"], "colormap_name": STYLE["colormap"]}


def measure(geogate: str, titiler: str, cog: Path, tiles: list[morecantile.Tile], cached: int) -> list[Row]:
    ours, theirs, hits = [], [], []
    with httpx.Client(timeout=30) as client:
        warm_up(client, geogate, titiler, cog)
        for n, tile in enumerate(tiles):
            path = f"{tile.z}/{tile.x}/{tile.y}.png"
            asks = [
                (ours, f"{geogate}/tiles/{path}", {"path": cog.name, **STYLE}),
                (theirs, f"{titiler}/tiles/WebMercatorQuad/{path}", {"url": str(cog), **_titiler_style()}),
            ]
            for into, url, params in asks if n % 2 == 0 else asks[::-1]:
                ms, answer = timed(client, url, params)
                if answer.status_code not in (200, 204):
                    raise RuntimeError(f"{url}: {answer.status_code} {answer.text[:200]}")
                into.append(ms)
        for tile in tiles[:cached]:
            ms, answer = timed(client, f"{geogate}/tiles/{tile.z}/{tile.x}/{tile.y}.png", {"path": cog.name, **STYLE})
            assert answer.headers.get("x-geogate-tile") == "hit", answer.headers
            hits.append(ms)
    for name, values in (("geogate uncached", ours), ("titiler", theirs), ("geogate cached", hits)):
        print(f"{name:<18}{describe(values)}")
    return [
        Row("XYZ tile p50, uncached (×titiler)", statistics.median(ours), statistics.median(theirs), "ms", "ratio", 1.0,
            baseline_name="titiler.core, same COG"),
        Row("XYZ tile p99, uncached (×titiler)", percentile(ours, 99), percentile(theirs, 99), "ms", "ratio", 1.0,
            baseline_name="titiler.core, same COG"),
        Row("XYZ tile p50, cached (×titiler)", statistics.median(hits), statistics.median(theirs), "ms", "ratio", 1.0,
            baseline_name="titiler.core, uncached"),
    ]  # fmt: skip


def run(tiles: int, cached: int, workers: int, titiler_python: str) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="geogate-xyz-") as folder:
        cog = write_cog(Path(folder))
        chosen = tiles_of(cog, tiles)
        with processes("titiler", "geogate-bench-titiler-") as (children, logs):
            port = free_port()
            env = {**os.environ, "PORT": str(port), "GDAL_CACHEMAX": "200"}
            children.spawn([titiler_python, "-c", TITILER_APP], env, log=logs / "titiler.log")
            titiler = f"http://127.0.0.1:{port}"
            _wait_http(f"{titiler}/docs")
            with geogate_stack(workers=workers, workspace=Path(folder)) as urls:
                return measure(urls[0].removesuffix("/mcp"), titiler, cog, chosen, min(cached, len(chosen)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiles", type=int, default=400, help="distinct uncached tiles asked of each")
    parser.add_argument("--cached", type=int, default=200, help="of those, asked again of Geogate (cache hits)")
    parser.add_argument("--workers", type=int, default=2, help="worker nodes of `geogate dev --workers N`")
    parser.add_argument("--titiler-python", default="/tmp/titiler-venv/bin/python")
    ns = parser.parse_args()
    show("XYZ tiles of a COG: Geogate against titiler", run(ns.tiles, ns.cached, ns.workers, ns.titiler_python))


if __name__ == "__main__":
    main()
