"""GIS bench: `raster_calc` (a two-band NDVI-like expression) and `raster_terrain` (slope) on
8192² float32 rasters, through the running stack, against the same NumPy/numexpr operation in this process.

Baselines run in this process in the same run, interleaved with the calls: rasterio reads the bands whole, numexpr
evaluates the same expression over them in float64 (Horn's slope for the DEM, from the same padded array), and
rasterio writes the same tiled 256 GeoTIFF. Geogate runs as `make run` does (`geogate dev`'s pools, 2 worker
processes), once with tiling off (`GEOGATE_TILE_MIN_PIXELS` above the raster: the call runs whole on one worker) and
once with the defaults (16 tiles of 2048² over both workers); both stacks are up together and used in turn. The
floor of the whole call is the baseline plus the output's sha256, which the log keeps for every output and the
baseline does not take (measured here).
Usage: python bench/gis.py [--runs 3] [--size 8192]
"""

import argparse
import contextlib
import hashlib
import math
import mmap
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numexpr
import numpy as np
import rasterio
from _report import Row, show
from _stack import geogate_stack
from affine import Affine
from rasterio.windows import Window
from tiles import Session, interleaved, timed

OFF = {"GEOGATE_TILE_MIN_PIXELS": str(1 << 40)}
EXPRESSION = "(b - a) / (b + a)"
DEGREES = 180.0 / math.pi
HORN = (
    "arctan(sqrt((((c + 2*f + i) - (a + 2*d + g)) * kx) ** 2 + (((a + 2*b + c) - (g + 2*h + i)) * ky) ** 2))"
    f" * {DEGREES!r}"
)
PROFILE = {"driver": "GTiff", "count": 1, "dtype": "float32", "tiled": True, "blockxsize": 256, "blockysize": 256}


def make_band(path: Path, size: int, crs: str, pattern: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    """A `size`² float32 GeoTIFF (tiled 256, uncompressed) of `pattern(rows, cols)`, written by strips."""
    profile = PROFILE | {"width": size, "height": size, "crs": crs}
    with rasterio.open(path, "w", transform=Affine(10.0, 0, 500_000, 0, -10.0, 5_600_000), **profile) as dst:
        for top in range(0, size, 1024):
            rows, cols = np.mgrid[top : top + 1024, 0:size].astype("float32")
            dst.write(pattern(rows, cols)[np.newaxis], window=Window(0, top, size, 1024))


def sources(root: Path, size: int) -> None:
    make_band(root / "red.tif", size, "EPSG:32633", lambda r, c: 500 + 400 * np.sin(r / 97.0) * np.cos(c / 61.0))
    make_band(root / "nir.tif", size, "EPSG:32633", lambda r, c: 2000 + 900 * np.cos(r / 53.0) * np.sin(c / 89.0))
    make_band(root / "dem.tif", size, "EPSG:32633", lambda r, c: 800 * np.sin(r / 700.0) * np.cos(c / 450.0) + r * 0.3)


def _write(path: Path, like: Path, data: np.ndarray) -> None:
    with rasterio.open(like) as src:
        profile = PROFILE | {"width": src.width, "height": src.height, "crs": src.crs, "transform": src.transform}
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data, 1)


def in_process_calc(root: Path) -> None:
    """NDVI as a NumPy user writes it: both bands whole, numexpr in float64, one GeoTIFF."""
    with rasterio.open(root / "red.tif") as red, rasterio.open(root / "nir.tif") as nir:
        bands = {"a": red.read(1).astype(np.float64), "b": nir.read(1).astype(np.float64)}
    ndvi = numexpr.evaluate(EXPRESSION, local_dict=bands)
    _write(root / "ndvi-baseline.tif", root / "red.tif", ndvi.astype(np.float32))


def in_process_slope(root: Path) -> None:
    """Horn's slope in degrees as a NumPy user writes it: the DEM whole, padded with NaN, one numexpr pass."""
    with rasterio.open(root / "dem.tif") as dem:
        z, (xres, yres) = dem.read(1).astype(np.float64), dem.res
    p = np.pad(z, 1, constant_values=np.nan)
    h, w = z.shape
    offsets = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2)]
    names = {k: p[r : r + h, c : c + w] for k, (r, c) in zip("abcdfghi", offsets, strict=True)}
    slope = numexpr.evaluate(HORN, local_dict=names | {"kx": 1 / (8 * xres), "ky": 1 / (8 * yres)})
    _write(root / "slope-baseline.tif", root / "dem.tif", np.nan_to_num(slope, nan=-9999.0).astype(np.float32))


def sha256_ms(path: Path) -> float:
    """What the log's digest of an output costs (the job hashes through a memory map, as here)."""

    def digest() -> None:
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            hashlib.sha256(mapped).hexdigest()

    return statistics.median(timed(digest) for _ in range(3))


def through(held: Session, tool: str, args: dict[str, object]) -> Callable[[], float]:
    def run() -> float:
        return held.call(tool, args)[0]

    return run


CALLS = {
    "calc": ("raster_calc", {"inputs": {"a": "red.tif", "b": "nir.tif"}, "expression": EXPRESSION}),
    "slope": ("raster_terrain", {"uri": "dem.tif", "product": "slope"}),
}


def measure(runs: int = 3, size: int = 8192) -> list[Row]:
    """Both stacks up together (tiling off, tiling on), every call and baseline interleaved in rounds, so each figure
    is set against baselines measured in the same minutes; the idle stack's workers wait on their queues."""
    with tempfile.TemporaryDirectory(prefix="geogate-gis-bench-") as tmp, contextlib.ExitStack() as stacks:
        root = Path(tmp)
        sources(root, size)
        jobs = {"calc in-process": lambda: timed(lambda: in_process_calc(root)),
                "slope in-process": lambda: timed(lambda: in_process_slope(root))}  # fmt: skip
        for label, env in (("whole", OFF), ("tiled", {})):
            urls = stacks.enter_context(geogate_stack(workers=2, workspace=root, env=env))
            held = stacks.enter_context(Session(urls[0]))
            for name, (tool, args) in CALLS.items():
                call_args = args | {"output": f"{name}-{label}.tif", "overwrite": True}
                jobs[f"{name} {label}"] = through(held, tool, call_args)
        samples = interleaved(runs, jobs)
        hashing = {name: sha256_ms(root / f"{name}-whole.tif") for name in CALLS}
    return report(samples, hashing, size)


def report(samples: dict[str, list[float]], hashing: dict[str, float], size: int) -> list[Row]:
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    print(f"raster_calc {EXPRESSION!r} and raster_terrain slope on {size}² float32 (medians, ms)")
    for name, value in p50.items():
        print(f"  {name:<20} {value:10.1f}   ({', '.join(f'{v:.0f}' for v in samples[name])})")
    print(f"  sha256 of the outputs: {', '.join(f'{k} {v:.0f} ms' for k, v in hashing.items())}")
    rows = []
    for name, title in (("calc", "raster_calc NDVI"), ("slope", "raster_terrain slope")):
        base = p50[f"{name} in-process"]
        floor = (base + hashing[name]) / base
        rows += [
            Row(f"{title} {size}², whole vs in-process", p50[f"{name} whole"], base, "ms", "ratio", 1.1,
                baseline_name="rasterio + numexpr in the bench's process", floor=floor,
                floor_name="the baseline plus the output's sha256 (the log keeps it)"),
            Row(f"{title} {size}², tiled on 2 workers vs in-process", p50[f"{name} tiled"], base, "ms", "ratio",
                1.0, baseline_name="rasterio + numexpr in the bench's process"),
        ]  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=8192)
    ns = parser.parse_args()
    show("gis", measure(ns.runs, ns.size))


if __name__ == "__main__":
    sys.exit(main())
