"""Tiles bench for the tracing tools: `raster_polygonize` and `raster_contours` of one large band, tiled on 2 worker
processes against the same call run whole on 2 worker processes (`GEOGATE_TILE_MIN_PIXELS` above the band).

Each stack is up alone, as `make run` is; its calls are interleaved with an in-process baseline (the tracing alone:
rasterio.features.shapes with shapely's conversion, contourpy over the band), and the whole stack's calls are
scaled to the tiled stack's rounds by that baseline (the machine's speed drifts between stacks). Where a tiled
call's time went is read off its log (plan, tiles, fan-in wait, assembly).
Usage: python bench/tiles_shapes.py [--runs 3] [--width 8192] [--height 4096]
"""

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import contourpy
import numpy as np
import rasterio
import rasterio.features
import shapely
from _report import Row, show
from _stack import geogate_stack
from affine import Affine
from rasterio.windows import Window
from tiles import OFF, Session, costs, interleaved, timed

STACKS = {"tiled, 2 workers": {"GEOGATE_TILE_POLYGONIZE_MIN_PIXELS": str(1 << 24)}, "whole, 2 workers": OFF}
"""Polygonize is tiled only when asked (it runs whole by default): the tiled stack asks from the default
`GEOGATE_TILE_MIN_PIXELS`."""
CONTOURS = {"uri": "dem.tif", "interval": 10.0, "output": "contours.gpkg", "overwrite": True}
POLYGONS = {"uri": "classes.tif", "output": "polygons.gpkg", "overwrite": True}


def make_sources(root: Path, width: int, height: int) -> None:
    """A land-cover-like classification (smooth classes with 0.1 % speckle: holes and small polygons) and a DEM
    (smooth hills), both int16 / float32 GeoTIFFs tiled 256, written by strips."""
    transform = Affine(10.0, 0, 500_000.0, 0, -10.0, 5_600_000.0)
    base = {"driver": "GTiff", "width": width, "height": height, "count": 1, "crs": "EPSG:32633", "tiled": True}
    base |= {"transform": transform, "blockxsize": 256, "blockysize": 256}
    rng = np.random.default_rng(3)
    with (
        rasterio.open(root / "classes.tif", "w", dtype="int16", nodata=-1, **base) as classes,
        rasterio.open(root / "dem.tif", "w", dtype="float32", nodata=-9999, **base) as dem,
    ):
        for top in range(0, height, 1024):
            rows, cols = np.mgrid[top : top + 1024, 0:width].astype("float32")
            field = np.sin(cols / 173.0) + np.cos(rows / 131.0) + np.sin((cols + rows) / 251.0)
            band = (np.floor(field * 2) % 6).astype("int16")
            speckle = rng.random(band.shape) < 0.001
            band[speckle] = rng.integers(0, 6, int(speckle.sum()))
            classes.write(band[np.newaxis], window=Window(0, top, width, 1024))
            z = field * 120 + np.sin(cols / 37.0) * np.cos(rows / 29.0) * 15 + 500
            dem.write(z.astype("float32")[np.newaxis], window=Window(0, top, width, 1024))


def trace_polygons(path: Path) -> None:
    with rasterio.open(path) as src:
        band = src.read(1, masked=True)
    for geojson, _ in rasterio.features.shapes(band.data, mask=~np.ma.getmaskarray(band), transform=src.transform):
        shapely.geometry.shape(geojson)


def trace_contours(path: Path) -> None:
    with rasterio.open(path) as src:
        data = np.ma.masked_invalid(src.read(1, masked=True).astype("float64"))
    generator = contourpy.contour_generator(z=data, line_type="ChunkCombinedOffset")
    for level in np.arange(np.ceil(data.min() / 10) * 10, data.max(), 10.0):
        generator.lines(float(level))


def measure(runs: int, width: int, height: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="geogate-tiles-shapes-") as tmp:
        root = Path(tmp)
        make_sources(root, width, height)
        baselines = {
            "shapes in-process": lambda: timed(lambda: trace_polygons(root / "classes.tif")),
            "contourpy in-process": lambda: timed(lambda: trace_contours(root / "dem.tif")),
        }
        rounds: dict[str, dict[str, list[float]]] = {}
        for name, env in STACKS.items():
            with geogate_stack(workers=2, workspace=root, env=env) as urls, Session(urls[0]) as held:
                calls: dict[str, list[str]] = {"raster_polygonize": [], "raster_contours": []}
                jobs = {**baselines, "polygonize": _through(held, "raster_polygonize", POLYGONS, calls)}
                jobs["contours"] = _through(held, "raster_contours", CONTOURS, calls)
                rounds[name] = interleaved(runs, jobs)
                if env is not OFF:
                    for tool, ids in calls.items():
                        cost = costs(urls.redis, ids[-1])
                        if cost is not None:
                            print(f"  {tool}, tiled, where the time went (s): plan {cost.plan_s:.2f}, tiles "
                                  f"{', '.join(f'{t:.2f}' for t in cost.tiles_s)}, fan-in wait "
                                  f"{cost.fan_in_wait_s:.2f}, assembly {cost.assembly_s:.2f}")  # fmt: skip
    return report(rounds, width, height)


def _through(held: Session, tool: str, args: dict[str, object], calls: dict[str, list[str]]) -> Callable[[], float]:
    def run() -> float:
        ms, call_id = held.call(tool, args)
        calls[tool].append(call_id)
        return ms

    return run


def report(rounds: dict[str, dict[str, list[float]]], width: int, height: int) -> list[Row]:
    p50 = {stack: {name: statistics.median(v) for name, v in runs.items()} for stack, runs in rounds.items()}
    print(f"raster_polygonize and raster_contours of a {width}×{height} band, on 2 worker processes (medians)")
    for stack, runs in rounds.items():
        print(f"  {stack}:")
        for name, values in runs.items():
            print(f"    {name:<22} {p50[stack][name]:10.1f} ms   ({', '.join(f'{v:.0f}' for v in values)})")
    rows = []
    for call, baseline in (("polygonize", "shapes in-process"), ("contours", "contourpy in-process")):
        tiled = p50["tiled, 2 workers"][call]
        scale = p50["tiled, 2 workers"][baseline] / p50["whole, 2 workers"][baseline]
        whole = p50["whole, 2 workers"][call] * scale
        print(f"  {call}: whole {whole:.0f} ms (scaled by {scale:.2f}), tiled {tiled:.0f} ms: {whole / tiled:.2f}×")
        rows.append(
            Row(f"tiled vs whole raster_{call} {width}×{height}, 2 workers", tiled, whole, "ms", "speed-up", 1.0,
                at_most=False, baseline_name=f"the same call with tiling off, scaled by the {baseline} trace")
        )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--height", type=int, default=4096)
    ns = parser.parse_args()
    show("tiles_shapes", measure(ns.runs, ns.width, ns.height))


if __name__ == "__main__":
    sys.exit(main())
