"""Job `raster_stats`: nodata-aware per-band statistics, read block by block."""

from pathlib import Path

import numpy as np
import rasterio

from schemas.tools.raster import BandStats, HistogramBin, RasterStatsArgs, RasterStatsResult
from workers.gdal.blocks import strips
from workers.gdal.errors import check_bands, open_raster, reading
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.files import resolve_in_workspace
from workers.jobkit.limits import check_raster, widest
from workers.tiling.grid import check_grid, tile_side

TILE_BLOCK = 256
"""Block the tile grid of `raster_stats` is aligned to (`workers.gdal.stats_tiles`)."""


def _valid_values(src: rasterio.DatasetReader, band: int, ctx: JobContext, step: tuple[int, int]) -> np.ndarray:
    """Every valid (unmasked, finite) value of `band`, gathered strip by strip."""
    windows, parts = strips(src.height, src.width), []
    for i, window in enumerate(windows, start=1):
        with reading(Path(src.name)):
            block = src.read(band, window=window, masked=True)
        values = block.compressed()
        parts.append(values[np.isfinite(values)] if values.dtype.kind == "f" else values)
        ctx.progress(step[0] + i / len(windows), step[1], f"band {band}: read {i}/{len(windows)} strips")
    return np.concatenate(parts) if parts else np.empty(0)


def _sample(values: np.ndarray, size: int | None) -> np.ndarray:
    if size is None or values.size <= size:
        return values
    return values[np.linspace(0, values.size - 1, size).astype(np.int64)]


def _histogram(values: np.ndarray, bins: int) -> list[HistogramBin]:
    counts, edges = np.histogram(values, bins=bins)
    return [HistogramBin(min_value=edges[i], max_value=edges[i + 1], count=int(c)) for i, c in enumerate(counts)]


def check_bounds(src: rasterio.DatasetReader, bands: list[int], ctx: JobContext) -> None:
    """Refuse bands past `GEOGATE_LIMIT_OUTPUT_BYTES` (their valid values are kept, in memory or as tiles' parts) or
    a grid past `GEOGATE_LIMIT_TILES`.

    Raises:
        JobFailed: `limit.output_bytes` or `limit.tiles`, on `uri`.
    """
    dtype = widest([src.dtypes[band - 1] for band in bands])
    check_raster(ctx, src.width, src.height, len(bands), dtype, "uri", read=True)
    check_grid(ctx, src.width, src.height, tile_side(ctx, TILE_BLOCK), "uri")


def band_stats(band: int, values: np.ndarray, total: int, args: RasterStatsArgs) -> BandStats:
    """Statistics of one band's valid values (`total` is the band's pixel count, valid or not).

    Counts always cover every value; the other figures use `args.sample_size` evenly spaced values when set.
    """
    if values.size == 0:
        return BandStats(band=band, valid_count=0, nodata_count=total)
    wide = _sample(values, args.sample_size).astype(np.float64)
    points = np.percentile(wide, [25.0, 50.0, 75.0, *args.percentiles])
    return BandStats(
        band=band,
        min=float(wide.min()),
        max=float(wide.max()),
        mean=float(wide.mean()),
        std=float(wide.std()),
        median=float(points[1]),
        percentile_25=float(points[0]),
        percentile_75=float(points[2]),
        percentiles={str(float(p)): float(v) for p, v in zip(args.percentiles, points[3:], strict=True)},
        valid_count=int(values.size),
        nodata_count=total - int(values.size),
        histogram=_histogram(wide, args.histogram_bins) if args.include_histogram else [],
    )


def raster_stats(args: RasterStatsArgs, ctx: JobContext) -> RasterStatsResult:
    """Per-band min, max, mean, std, median, percentiles and optional histogram, ignoring nodata and NaN.

    Raises:
        JobFailed: a path outside the workspace, an unreadable raster, or a band out of range.
        JobCancelled: the call was cancelled.
    """
    path = resolve_in_workspace(args.uri, ctx.roots)
    with open_raster(path) as src:
        bands = args.bands or list(range(1, src.count + 1))
        check_bands(bands, src.count, "bands")
        check_bounds(src, bands, ctx)
        total = src.width * src.height
        stats = []
        for n, band in enumerate(bands):
            values = _valid_values(src, band, ctx, (n, len(bands)))
            stats.append(band_stats(band, values, total, args))
    sampled = args.sample_size is not None and any(s.valid_count > args.sample_size for s in stats)
    return RasterStatsResult(path=objects.shown(path), band_stats=stats, total_pixels=total, sampled=sampled)
