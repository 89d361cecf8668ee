"""The analysis tools' jobs (`schemas/tools/analysis.py`): zonal statistics, polygonize, rasterize and contours, and
how polygonize and contours run by tiles."""

from schemas.tools.analysis import (
    RASTER_CONTOURS,
    RASTER_POLYGONIZE,
    VECTOR_RASTERIZE,
    ZONAL_STATS,
    RasterContoursArgs,
    RasterContoursResult,
    RasterPolygonizeArgs,
    RasterPolygonizeResult,
    VectorRasterizeArgs,
    VectorRasterizeResult,
    ZonalStatsArgs,
    ZonalStatsResult,
)
from workers.gdal import contours_tiles, polygonize_tiles, rasterize, shapes, zonal
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.tiling.declare import tiler


@job(ZONAL_STATS)
def zonal_stats(args: ZonalStatsArgs, ctx: JobContext) -> ZonalStatsResult:
    """Statistics of `args.band` per polygon of `args.zones`, per feature or written to `args.output`."""
    return zonal.zonal_stats(args, ctx)


@job(RASTER_POLYGONIZE)
def raster_polygonize(args: RasterPolygonizeArgs, ctx: JobContext) -> RasterPolygonizeResult:
    """Polygons of connected equal-valued pixels of `args.band`, with the value in `args.field_name`."""
    return shapes.raster_polygonize(args, ctx)


@job(VECTOR_RASTERIZE)
def vector_rasterize(args: VectorRasterizeArgs, ctx: JobContext) -> VectorRasterizeResult:
    """Burn `args.uri`'s geometries into a GeoTIFF at `args.output` (a value or an attribute per feature)."""
    return rasterize.vector_rasterize(args, ctx)


@job(RASTER_CONTOURS)
def raster_contours(args: RasterContoursArgs, ctx: JobContext) -> RasterContoursResult:
    """Contour lines of `args.band` at `args.interval` or `args.levels`, one feature per line with its level."""
    return shapes.raster_contours(args, ctx)


tiler(RASTER_POLYGONIZE, plan=polygonize_tiles.plan, run=polygonize_tiles.run, assemble=polygonize_tiles.assemble)
tiler(RASTER_CONTOURS, plan=contours_tiles.plan, run=contours_tiles.run, assemble=contours_tiles.assemble)
