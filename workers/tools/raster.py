"""The raster tools' jobs (`schemas/tools/raster.py`): metadata, convert, reproject and statistics, and how the
large ones run by tiles."""

from schemas.tools.raster import (
    RASTER_CONVERT,
    RASTER_INFO,
    RASTER_REPROJECT,
    RASTER_STATS,
    RasterConvertArgs,
    RasterConvertResult,
    RasterInfoArgs,
    RasterInfoResult,
    RasterReprojectArgs,
    RasterReprojectResult,
    RasterStatsArgs,
    RasterStatsResult,
)
from workers.gdal import convert, convert_tiles, info, reproject, reproject_tiles, stats, stats_tiles
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.tiling.declare import tiler


@job(RASTER_INFO)
def raster_info(args: RasterInfoArgs, ctx: JobContext) -> RasterInfoResult:
    """Describe a raster: driver, size, bands, CRS, transform, bounds, nodata and overviews."""
    return info.raster_info(args, ctx)


@job(RASTER_CONVERT)
def raster_convert(args: RasterConvertArgs, ctx: JobContext) -> RasterConvertResult:
    """Copy `args.uri` into `args.output` with the requested driver, compression, tiling and overviews."""
    return convert.raster_convert(args, ctx)


@job(RASTER_REPROJECT)
def raster_reproject(args: RasterReprojectArgs, ctx: JobContext) -> RasterReprojectResult:
    """Warp `args.uri` into `args.dst_crs`, strip by strip, and write a tiled GeoTIFF at `args.output`."""
    return reproject.raster_reproject(args, ctx)


@job(RASTER_STATS)
def raster_stats(args: RasterStatsArgs, ctx: JobContext) -> RasterStatsResult:
    """Per-band min, max, mean, std, median, percentiles and optional histogram, ignoring nodata and NaN."""
    return stats.raster_stats(args, ctx)


tiler(RASTER_CONVERT, plan=convert_tiles.plan, run=convert_tiles.run, assemble=convert_tiles.assemble)
tiler(RASTER_REPROJECT, plan=reproject_tiles.plan, run=reproject_tiles.run, assemble=reproject_tiles.assemble)
tiler(RASTER_STATS, plan=stats_tiles.plan, run=stats_tiles.run, assemble=stats_tiles.assemble)
