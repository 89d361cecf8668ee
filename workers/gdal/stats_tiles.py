"""`raster_stats` by tiles: each tile reads its window of every band, keeps its valid values and their coarse counts
as part files and reports their count, extremes and moments; the fan-in merges those exactly and finds percentiles
and histogram counts from the parts (`workers.gdal.stats_merge`). Calls with `sample_size` run whole: the sample
is evenly spaced over all of a band's values, which no tile knows."""

import os
from pathlib import Path

import numpy as np
import rasterio
from rasterio.windows import Window

from schemas.tools.raster import BandStats, HistogramBin, RasterStatsArgs, RasterStatsResult
from schemas.tools.tiling import TileArgs, TileResult, TileWindow
from workers.gdal.errors import check_bands, open_raster, reading
from workers.gdal.stats import TILE_BLOCK, check_bounds
from workers.gdal.stats_merge import Moments, Part, histogram, percentiles, summarise
from workers.jobkit.context import JobContext
from workers.jobkit.files import resolve_in_workspace
from workers.tiling.declare import Plan
from workers.tiling.grid import parts_folder, root_of, tile_side, windows, worth_tiling

BLOCK = TILE_BLOCK


def plan(args: RasterStatsArgs, ctx: JobContext) -> Plan | None:
    """The source grid cut into tiles when it is large and no sample was asked for."""
    if args.sample_size is not None:
        return None
    path = resolve_in_workspace(args.uri, ctx.roots)
    with open_raster(path) as src:
        bands = args.bands or list(range(1, src.count + 1))
        check_bands(bands, src.count, "bands")
        check_bounds(src, bands, ctx)
        width, height = src.width, src.height
    side = tile_side(ctx, BLOCK)
    if not worth_tiling(ctx, width, height, side):
        return None
    folder = parts_folder(root_of(path, ctx.roots), ctx.call_id)
    tiles, columns, rows = windows(width, height, side)
    shared = {"source": str(path), "bands": bands, "folder": str(folder)}
    return Plan(tiles, columns, rows, side, width, height, folder, shared)


def _part(folder: Path, band: int, index: int, kind: str = "values") -> Path:
    return folder / f"band{band}.tile{index}.{kind}.npy"


def run(args: TileArgs, ctx: JobContext) -> TileResult:
    """Keep each band's valid values of the window and their coarse counts as part files; report their moments
    and extremes."""
    path = resolve_in_workspace(str(args.plan["source"]), ctx.roots)
    folder, window = Path(str(args.plan["folder"])), args.window
    partial = {}
    with open_raster(path) as src:
        for band in args.plan["bands"]:  # type: ignore[union-attr]
            values = _valid(src, path, int(band), window)
            ctx.progress(0, 1, f"band {band}: {window.describe()}")
            if ctx.fence is not None:
                ctx.fence.check()
            moments, counts = summarise(values)
            _save(_part(folder, int(band), args.index), values)
            _save(_part(folder, int(band), args.index, "counts"), counts)
            partial[str(band)] = {"count": moments.count, "mean": moments.mean, "m2": moments.m2}
            if values.size:
                partial[str(band)] |= {"min": float(values.min()), "max": float(values.max())}
    return TileResult(index=args.index, window=window, partial=partial)


def _valid(src: rasterio.DatasetReader, path: Path, band: int, window: TileWindow) -> np.ndarray:
    """The band's unmasked, finite values in the window, as `workers.gdal.stats` reads them."""
    with reading(path):
        block = src.read(band, window=Window(window.col_off, window.row_off, window.width, window.height), masked=True)
    values = block.compressed()
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        values = values[np.isfinite(values)]
    return values


def _save(path: Path, values: np.ndarray) -> None:
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    with aside.open("wb") as handle:
        np.save(handle, values)
    aside.replace(path)


def assemble(args: RasterStatsArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext) -> RasterStatsResult:
    """Merge the tiles' numbers band by band; order statistics and histograms from the sorted parts."""
    folder, bands = Path(str(first.plan["folder"])), [int(b) for b in first.plan["bands"]]  # type: ignore[union-attr]
    total = sum(t.window.width * t.window.height for t in tiles)
    stats = [_band(band, folder, tiles, total, args, ctx) for band in bands]
    return RasterStatsResult(path=str(first.plan["source"]), band_stats=stats, total_pixels=total, sampled=False)


def _band(
    band: int, folder: Path, tiles: list[TileResult], total: int, args: RasterStatsArgs, ctx: JobContext
) -> BandStats:
    pieces = [t.partial[str(band)] for t in tiles]  # type: ignore[index]
    moments = Moments(0, 0.0, 0.0)
    for piece in pieces:
        moments = moments.merge(Moments(int(piece["count"]), float(piece["mean"]), float(piece["m2"])))
    if moments.count == 0:
        return BandStats(band=band, valid_count=0, nodata_count=total)
    low = min(float(p["min"]) for p in pieces if "min" in p)
    high = max(float(p["max"]) for p in pieces if "max" in p)
    parts = [_load(folder, band, t.index) for t in tiles]
    points = percentiles(parts, [25.0, 50.0, 75.0, *args.percentiles])
    return BandStats(
        band=band,
        min=low,
        max=high,
        mean=moments.mean,
        std=moments.std,
        median=points[1],
        percentile_25=points[0],
        percentile_75=points[2],
        percentiles={str(float(p)): v for p, v in zip(args.percentiles, points[3:], strict=True)},
        valid_count=moments.count,
        nodata_count=total - moments.count,
        histogram=_histogram(parts, low, high, args) if args.include_histogram else [],
    )


def _load(folder: Path, band: int, index: int) -> Part:
    path = _part(folder, band, index)
    return Part(np.load(_part(folder, band, index, "counts")), lambda: np.load(path, mmap_mode="r"))


def _histogram(parts: list[Part], low: float, high: float, args: RasterStatsArgs) -> list[HistogramBin]:
    counts, edges = histogram([part.values() for part in parts], low, high, args.histogram_bins)
    return [HistogramBin(min_value=edges[i], max_value=edges[i + 1], count=c) for i, c in enumerate(counts)]
