"""Tiles bench of `raster_mosaic` and `vector_rasterize`: each call with tiling on and off, on two stacks of 2
worker processes (`make run`'s pools) up together, the calls interleaved so both are timed in the same minutes.

Mosaic: four 4200² float32 rasters in EPSG:32633 in a 2×2 layout overlapping by 200 pixels (an 8200² output),
merged `first` and `mean`; and two inputs where the second is in EPSG:4326 and warped (bilinear), merged `max`.
Rasterize: 20,000 triangles and 2,000 lines over the same extent burnt at 10 m (an 8200² deflate uint8 output),
by pixel centre and `all_touched`; and 5,000 wavy rings of 400 vertices each (GDAL's scanline fill visits every
edge of a polygon on each of its rows, so these cost far more per pixel). `vector_rasterize` always runs whole
(docs/tiles.md, "Mosaic pays, rasterize does not"), so its rows run whole on both stacks.
Usage: python bench/tiles_burn.py [--runs 3] [--only NAME ...]
"""

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio.raw
import rasterio
import shapely
from _report import Row, show
from _stack import geogate_stack
from affine import Affine
from rasterio.warp import transform_bounds
from tiles import OFF, Session, interleaved

LEFT, TOP, RES, SIDE = 500_000.0, 5_540_000.0, 10.0, 4200


def make_inputs(root: Path) -> None:
    """The mosaic's rasters (smooth patterns, nodata -9999 in a corner of each) and the rasterize layer."""
    rows, cols = np.mgrid[0:SIDE, 0:SIDE].astype("float32")
    for index, (col, row) in enumerate([(0, 0), (4000, 0), (0, 4000), (4000, 4000)]):
        data = (np.sin((rows + row) / (97.0 + index)) * np.cos((cols + col) / 61.0) * 1000.0).astype("float32")
        data[:300, :300] = -9999
        profile = {"driver": "GTiff", "width": SIDE, "height": SIDE, "count": 1, "dtype": "float32", "nodata": -9999}
        transform = Affine(RES, 0, LEFT + col * RES, 0, -RES, TOP - row * RES)
        with rasterio.open(root / f"m{index}.tif", "w", crs="EPSG:32633", transform=transform, tiled=True,
                           **profile) as dst:  # fmt: skip
            dst.write(data, 1)
    west, south, east, north = transform_bounds("EPSG:32633", "EPSG:4326", LEFT + 20_000, TOP - 60_000, LEFT + 60_000,
                                                TOP - 20_000)  # fmt: skip
    profile = {"driver": "GTiff", "width": SIDE, "height": SIDE, "count": 1, "dtype": "float32", "nodata": -9999}
    transform = Affine((east - west) / SIDE, 0, west, 0, -(north - south) / SIDE, north)
    with rasterio.open(root / "geo.tif", "w", crs="EPSG:4326", transform=transform, tiled=True, **profile) as dst:
        dst.write((np.sin(rows / 50.0) * 800.0).astype("float32"), 1)
    rng = np.random.default_rng(1)
    extent = 8200 * RES
    corners = np.column_stack([LEFT + rng.uniform(0, extent, 20_000), TOP - rng.uniform(0, extent, 20_000)])
    shapes = [shapely.Polygon(c + rng.uniform(-1500, 1500, (3, 2))) for c in corners]
    shapes += [shapely.LineString(c + np.cumsum(rng.uniform(-800, 800, (6, 2)), axis=0)) for c in corners[:2000]]
    shapes.insert(0, shapely.GeometryCollection([shapely.box(LEFT, TOP - extent, LEFT + 1, TOP - extent + 1)]))
    shapes.append(shapely.box(LEFT + extent - 1, TOP - 1, LEFT + extent, TOP))  # the extent's far corner
    wkb = np.array(shapely.to_wkb(shapes), dtype=object)
    ids = np.arange(len(shapes), dtype="int64") % 250
    pyogrio.raw.write(root / "f.gpkg", wkb, [ids], ["id"], driver="GPKG", geometry_type="Unknown", crs="EPSG:32633")
    angles = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    rings = []
    for x, y in corners[:5000]:
        radius = rng.uniform(200, 2500) * (1 + 0.3 * np.sin(angles * rng.integers(3, 20)))
        rings.append(shapely.Polygon(np.column_stack([x + radius * np.cos(angles), y + radius * np.sin(angles)])))
    wkb = np.array(shapely.to_wkb(rings), dtype=object)
    ids = np.arange(len(rings), dtype="int64") % 250
    pyogrio.raw.write(root / "h.gpkg", wkb, [ids], ["id"], driver="GPKG", geometry_type="Polygon", crs="EPSG:32633")


CALLS: dict[str, tuple[str, dict[str, object]]] = {
    "mosaic first": ("raster_mosaic", {"inputs": [f"m{i}.tif" for i in range(4)], "method": "first"}),
    "mosaic mean": ("raster_mosaic", {"inputs": [f"m{i}.tif" for i in range(4)], "method": "mean"}),
    "mosaic warped max": ("raster_mosaic", {"inputs": ["m0.tif", "geo.tif"], "method": "max"}),
    "rasterize centre": ("vector_rasterize", {"uri": "f.gpkg", "attribute": "id", "resolution": [RES, RES]}),
    "rasterize all_touched": (
        "vector_rasterize",
        {"uri": "f.gpkg", "attribute": "id", "resolution": [RES, RES], "all_touched": True},
    ),
    "rasterize rings": ("vector_rasterize", {"uri": "h.gpkg", "attribute": "id", "resolution": [RES, RES]}),
}


def _through(held: Session, tool: str, args: dict[str, object], output: str) -> Callable[[], float]:
    extra = {"resampling": "bilinear"} if tool == "raster_mosaic" else {"dtype": "uint8"}
    return lambda: held.call(tool, {**args, **extra, "output": output, "overwrite": True})[0]


def measure(runs: int, only: list[str] | None = None) -> list[Row]:
    """Both stacks up together; each call's whole and tiled runs interleaved (the calls named in `only`, else
    all)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="geogate-tiles-burn-") as tmp:
        root = Path(tmp)
        make_inputs(root)
        with (
            geogate_stack(workers=2, workspace=root) as tiled_urls,
            geogate_stack(workers=2, workspace=root, env=OFF) as whole_urls,
            Session(tiled_urls[0]) as tiled,
            Session(whole_urls[0]) as whole,
        ):
            for name, (tool, args) in CALLS.items():
                if only and name not in only:
                    continue
                jobs = {"tiled": _through(tiled, tool, args, "t.tif"), "whole": _through(whole, tool, args, "w.tif")}
                samples = interleaved(runs, jobs)
                p50 = {k: statistics.median(v) for k, v in samples.items()}
                shown = {k: ", ".join(f"{x:.0f}" for x in v) for k, v in samples.items()}
                speed_up = p50["whole"] / p50["tiled"]
                print(f"  {name:<22} tiled {p50['tiled']:8.0f} ms ({shown['tiled']})   "
                      f"whole {p50['whole']:8.0f} ms ({shown['whole']})   speed-up {speed_up:.2f}×")  # fmt: skip
                rows.append(Row(f"tiled vs whole {name}, 2 workers", p50["tiled"], p50["whole"], "ms", "speed-up",
                                1.2, at_most=False, baseline_name="tiling off, the same minutes"))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=list(CALLS))
    ns = parser.parse_args()
    show("tiles_burn", measure(ns.runs, ns.only))


if __name__ == "__main__":
    sys.exit(main())
