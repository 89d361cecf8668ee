"""STAC composites bench: `stac_composite` (the median of 4 bands of 6 Sentinel-2-like items, clouds masked by their
SCL, over an area crossing 3 tiles, tiled across 2 workers) against odc-stac with dask on the same grid and cores.

The data is the tests' fixture at a larger size (`tests/stac/scenes.py` with a `Layout`: 2 dates × 3 overlapping
tiles of 2048² at 10 m by default, 4 bands and SCL, deflate COGs of 1024² blocks with overviews), served by the
tests' range server, which counts the bytes of every range it answers, its items in the tests' pgstac catalog behind
stac-fastapi. Each round has its own collection whose hrefs name the same files under a new path (a symlink), so
neither side finds a previous round's bytes in GDAL's per-URL cache: every figure is a cold read.

- **Geogate**: `geogate dev`'s pools with 2 gdal worker processes, the STAC toolset on, the catalog and the COG
  server allow-listed, `GEOGATE_TILE_*` set so that the composite runs as tiles over both workers; timed from the
  call to its answer (one MCP session held open).
- **Baseline**, in the bench's process, end to end as a user writes it: pystac-client's search of the same catalog,
  `odc.stac.load(..., groupby="id", chunks=...)` onto the composite's own grid (its CRS, transform and size read off
  the composite's COG), SCL's dropped classes masked, xarray's median over time computed by dask's threaded
  scheduler with 2 workers, and the bands written as a COG with the options Geogate's output has.

Rounds alternate which side goes first; the first round on each side is a warm-up, not timed. The outputs of the
last round are compared pixel by pixel (the largest difference, and where they differ).

odc-stac rather than stackstac: odc-stac is maintained (0.5.3, 2026; stackstac's last release is 0.5.1 of 2024) and
loads onto a given `GeoBox`, so its grid is the composite's exactly; stackstac takes bounds and a resolution.

Usage: python bench/stac.py [--runs 3] [--size 2048] [--block 1024] [--tile-size 1024] [--chunk 1024] [--json PATH]
"""

import argparse
import copy
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dask
import numpy as np
import odc.stac
import pystac_client
import rasterio
from _report import Row, load, show, write_json
from _stack import geogate_stack
from odc.geo.geobox import GeoBox
from rasterio.warp import transform_bounds
from tiles import Session, costs
from tiles_model import TiledCall

from tests.stac.catalog import SentinelCatalog, load_collection, sentinel_catalog
from tests.stac.scenes import COLLECTION, CRS, Layout, collection

BANDS = ["B02", "B03", "B04", "B08"]
DROP = [3, 8, 9, 10]
"""SCL classes left out: cloud shadow, cloud of medium and high probability, thin cirrus."""
AREA = (605_000.0, 5_148_000.0, 613_000.0, 5_156_000.0)
"""The area in UTM 33N metres on the tests' layout (it crosses the 3 tiles); scaled with the layout's tiles."""
SCHEDULER = {"scheduler": "threads", "num_workers": 2}
COG = {"driver": "COG", "compress": "deflate", "bigtiff": "IF_SAFER", "num_threads": "ALL_CPUS"}
"""The options Geogate writes a composite with (`workers.stac.composite.COG`; importing `workers` here would send
this process's GDAL reads to the remote guard's closed proxy)."""
TOLERANCE = 1e-6
"""Relative difference under which two composites' pixels agree."""


@dataclass
class Outcome:
    """Milliseconds, bytes and ranges read per side and round; the grid; the comparison of the last outputs."""

    ms: dict[str, list[float]] = field(default_factory=dict)
    bytes: dict[str, list[int]] = field(default_factory=dict)
    ranges: dict[str, list[int]] = field(default_factory=dict)
    calls: list[TiledCall | None] = field(default_factory=list)
    """Where each timed composite's time went, from its events (None: it ran whole)."""
    grid: str = ""
    agreement: str = ""
    agrees: bool = False


def area_of(layout: Layout) -> list[float]:
    """The bench's area in degrees for `layout`: `AREA` scaled about the first tile's corner as the tiles are."""
    corners = (*layout.scaled(*AREA[:2]), *layout.scaled(*AREA[2:]))
    return [round(v, 6) for v in transform_bounds(CRS, "EPSG:4326", *corners)]


def add_round(catalog: SentinelCatalog, number: int, folder: Path) -> str:
    """A collection of the same items whose hrefs name the same files under `/r<number>/` (a symlink to the COGs'
    folder): URLs no GDAL process has read yet. Its name."""
    prefix = f"r{number}"
    (catalog.cogs_root / prefix).symlink_to(".", target_is_directory=True)
    name = f"{COLLECTION}-{prefix}"
    items = []
    for scene in catalog.scenes:
        item = copy.deepcopy(scene.item) | {"collection": name}
        for asset in item["assets"].values():
            asset["href"] = asset["href"].replace(catalog.cogs.url, f"{catalog.cogs.url}/{prefix}", 1)
        items.append(item)
    load_collection(catalog.dsn, collection(catalog.scenes, name), items, folder)
    return name


def composite_args(catalog: SentinelCatalog, name: str, area: list[float]) -> dict[str, object]:
    search = {"catalog": catalog.api, "collections": [name], "bbox": area, "sortby": ["properties.datetime"]}
    return {"search": search, "assets": BANDS, "mask": {"asset": "SCL", "drop": DROP}, "reducer": "median",
            "bbox": area, "output": "geogate.tif", "overwrite": True}  # fmt: skip


def geobox_of(path: Path) -> GeoBox:
    """The grid of a written composite: its CRS, transform and size."""
    with rasterio.open(path) as src:
        return GeoBox((src.height, src.width), src.transform, src.crs.to_wkt())


def odc_composite(api: str, name: str, area: list[float], geobox: GeoBox, out: Path, chunk: int) -> None:
    """The composite as an odc-stac user computes it: GDAL set up for cloud reads (no directory listing, no sidecar
    probes, as Geogate's remote reads), search, lazy load on the grid, mask, median, write a COG."""
    odc.stac.configure_rio(cloud_defaults=True)
    items = pystac_client.Client.open(api).search(collections=[name], bbox=area).item_collection()
    data = odc.stac.load(
        items, bands=[*BANDS, "SCL"], groupby="id", geobox=geobox, chunks={"x": chunk, "y": chunk},
        resampling="nearest",
    )  # fmt: skip
    clear = data.SCL.notnull() & ~data.SCL.isin(DROP)
    median = data[BANDS].where(clear).median("time").to_dataarray("band")
    with dask.config.set(**SCHEDULER), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)  # numpy's, for pixels no item has
        values = median.compute().to_numpy()
    profile = COG | {"dtype": "float32", "count": len(BANDS), "width": geobox.width, "height": geobox.height}
    profile |= {"crs": geobox.crs.to_wkt(), "transform": geobox.affine, "nodata": float("nan")}
    with rasterio.open(out, "w", **profile) as dst:
        dst.write(values)


@contextmanager
def counted(catalog: SentinelCatalog, got: Outcome, side: str) -> Iterator[None]:
    """The ranges the COG server answers inside the block, as that side's bytes and ranges of this round."""
    with catalog.cogs.lock:
        catalog.cogs.ranges.clear()
    yield
    with catalog.cogs.lock:
        got.bytes.setdefault(side, []).append(catalog.cogs.bytes_read())
        got.ranges.setdefault(side, []).append(len(catalog.cogs.ranges))


def compare(ours: Path, theirs: Path) -> tuple[str, bool]:
    """Both composites pixel by pixel: the largest difference where both have a value, the pixels where one has a
    value and the other not, and the window holding every pixel that differs."""
    with rasterio.open(ours) as a, rasterio.open(theirs) as b:
        x, y = a.read(), b.read()
    both = np.isfinite(x) & np.isfinite(y)
    delta = np.where(both, np.abs(x - y), 0.0)
    largest = float(delta.max()) if delta.size else 0.0
    differ = (delta > TOLERANCE * np.abs(np.where(both, y, 0.0))) | (np.isfinite(x) != np.isfinite(y))
    one_only = int((np.isfinite(x) != np.isfinite(y)).sum())
    text = f"largest difference {largest:g}; {int(differ.sum()):,} of {differ.size:,} values differ"
    text += f" ({one_only:,} with a value on one side only)"
    if differ.any():
        rows, cols = np.nonzero(differ.any(axis=0))
        text += f", within rows {rows.min()}-{rows.max()}, columns {cols.min()}-{cols.max()} of the grid"
    return text, not differ.any()


def rounds(jobs: dict[str, Callable[[int], float]], runs: int, got: Outcome) -> None:
    """Round 0 warms each side up (Geogate first: the baseline's grid is its output's); then `runs` rounds in
    alternating order, each on its own collection."""
    for number in range(runs + 1):
        order = list(jobs) if number % 2 == 0 else list(reversed(jobs))
        for side in order:
            ms = jobs[side](number)
            if number == 0:
                got.bytes[side].clear()
                got.ranges[side].clear()
                got.calls.clear()
            else:
                got.ms.setdefault(side, []).append(ms)
                print(f"  round {number}: {side:<8} {ms:8.0f} ms  {got.bytes[side][-1]:>12,} bytes", flush=True)


def measure_all(runs: int = 3, layout: Layout | None = None, tile_size: int = 1024, chunk: int = 1024) -> Outcome:
    """The catalog up with a collection per round, the stack up with a session held on it, the rounds; what was
    measured."""
    layout = layout or default_layout()
    got, area = Outcome(), area_of(layout)
    with tempfile.TemporaryDirectory(prefix="geogate-stac-bench-") as tmp:
        root = Path(tmp)
        (root / "workspace").mkdir()
        began = time.perf_counter()
        with sentinel_catalog(root / "catalog", layout) as catalog:
            names = [add_round(catalog, n, root) for n in range(runs + 1)]
            size = sum(p.stat().st_size for s in catalog.scenes for p in s.folder.glob("*.tif"))
            print(f"catalog: 6 items, 30 COGs, {size:,} bytes, up in {time.perf_counter() - began:.1f} s; {load()}")
            env = {
                "GEOGATE_TOOLSETS": "core,raster,stac",
                "GEOGATE_STAC_CATALOGS": catalog.api.removeprefix("http://"),
                "GEOGATE_REMOTE_HOSTS": catalog.cogs.authority,
                "GEOGATE_TILE_MIN_PIXELS": "65536",
                "GEOGATE_TILE_SIZE": str(tile_size),
            }
            with geogate_stack(workers=2, workspace=root / "workspace", env=env) as urls, Session(urls[0]) as held:
                jobs = _jobs(held, urls.redis, catalog, names, area, root, chunk, got)
                rounds(jobs, runs, got)
        got.agreement, got.agrees = compare(root / "workspace" / "geogate.tif", root / "odc.tif")
    return got


def _jobs(
    held: Session,
    redis_url: str,
    catalog: SentinelCatalog,
    names: list[str],
    area: list[float],
    root: Path,
    chunk: int,
    got: Outcome,
) -> dict[str, Callable[[int], float]]:
    """Each side as `round → milliseconds`, its bytes counted into `got`, and Geogate's calls' spans."""
    output = root / "workspace" / "geogate.tif"

    def geogate(number: int) -> float:
        with counted(catalog, got, "geogate"):
            ms, call_id = held.call("stac_composite", composite_args(catalog, names[number], area))
        got.calls.append(costs(redis_url, call_id))
        grid = geobox_of(output)
        got.grid = got.grid or f"{grid.width} × {grid.height} pixels of {grid.resolution.x:g} m, EPSG:{grid.crs.epsg}"
        return ms

    def odc(number: int) -> float:
        grid = geobox_of(output)
        began = time.perf_counter()
        with counted(catalog, got, "odc-stac"):
            odc_composite(catalog.api, names[number], area, grid, root / "odc.tif", chunk)
        return (time.perf_counter() - began) * 1000

    return {"geogate": geogate, "odc-stac": odc}


def report(got: Outcome, layout: Layout, tile_size: int, chunk: int) -> list[Row]:
    p50 = {side: statistics.median(values) for side, values in got.ms.items()}
    print(f"stac_composite against odc-stac + dask, {got.grid} (medians; {load()})")
    for side, values in got.ms.items():
        read = statistics.median(got.bytes[side])
        ranges = statistics.median(got.ranges[side])
        print(f"  {side:<9} {p50[side]:8.0f} ms ({', '.join(f'{v:.0f}' for v in values)}); "
              f"read {read:,.0f} bytes in {ranges:.0f} ranges")  # fmt: skip
    paired = [a / b for a, b in zip(got.ms["geogate"], got.ms["odc-stac"], strict=True)]
    print(f"  Geogate / odc-stac: {p50['geogate'] / p50['odc-stac']:.2f}× of the medians; round by round "
          + ", ".join(f"{r:.2f}" for r in paired))  # fmt: skip
    print(f"  check: {got.agreement}: {'agree' if got.agrees else 'DISAGREE'}")
    print(f"  {spans(got.calls)}")
    what = f"stac_composite median, 4 bands × 6 items {layout.size}² at {layout.pixel:g} m, tiles of {tile_size}"
    return [
        Row(f"{what}, 2 workers vs odc-stac", p50["geogate"], p50["odc-stac"], "ms", "ratio", 1.0,
            baseline_name=f"pystac-client + odc.stac.load (chunks {chunk}²) + xarray median on dask threads ×2 + COG")
    ]  # fmt: skip


def spans(calls: list[TiledCall | None]) -> str:
    """Where Geogate's composites spent their time (medians over the rounds), from their events."""
    tiled = [call for call in calls if call is not None]
    if not tiled:
        return "Geogate's composites ran whole (the grid is under GEOGATE_TILE_MIN_PIXELS or one tile)"
    names = ("plan_s", "work_s", "fan_in_wait_s", "assembly_s")
    median = {name: statistics.median(getattr(call, name) for call in tiled) for name in names}
    longest = statistics.median(max(call.tiles_s) for call in tiled)
    return (
        f"Geogate's call (medians, s): search, grid and fan-out {median['plan_s']:.2f}; "
        f"{len(tiled[0].tiles_s)} tiles of {median['work_s']:.2f} in all (the longest {longest:.2f}); "
        f"the fan-in's wait {median['fan_in_wait_s']:.2f}; the COG's assembly {median['assembly_s']:.2f}"
    )


def measure(runs: int = 3) -> list[Row]:
    """The bench's row at its default size (`make bench`'s part `stac`).

    Raises:
        SystemExit: the composites disagree (after the figures are printed).
    """
    layout = default_layout()
    got = measure_all(runs, layout)
    rows = report(got, layout, 1024, 1024)
    if not got.agrees:
        raise SystemExit(f"stac: the composites disagree: {got.agreement}")
    return rows


def default_layout(size: int = 2048, block: int = 1024) -> Layout:
    """Tiles of `size`² 10 m pixels in COGs of `block`² blocks, overviews down to about 256 pixels."""
    return Layout(size=size, pixel=10.0, block=block, overviews=max(1, (size // 256).bit_length() - 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=2048, help="pixels on a side of a tile (10 m pixels)")
    parser.add_argument("--block", type=int, default=1024, help="the COGs' block side")
    parser.add_argument("--tile-size", type=int, default=1024, help="GEOGATE_TILE_SIZE")
    parser.add_argument("--chunk", type=int, default=1024, help="odc-stac's chunk side")
    parser.add_argument("--json", type=Path, default=None, help="also write the row and the bytes as JSON")
    ns = parser.parse_args()
    layout = default_layout(ns.size, ns.block)
    start = os.getloadavg()
    got = measure_all(ns.runs, layout, ns.tile_size, ns.chunk)
    rows = report(got, layout, ns.tile_size, ns.chunk)
    show("STAC composites", rows)
    if ns.json:
        write_json(ns.json, rows, {"start": start, "end": os.getloadavg()}, runs=ns.runs, grid=got.grid,
                   bytes_read=got.bytes, ranges=got.ranges, check=got.agreement)  # fmt: skip
    if not got.agrees:
        raise SystemExit(f"stac: the composites disagree: {got.agreement}")


if __name__ == "__main__":
    main()
