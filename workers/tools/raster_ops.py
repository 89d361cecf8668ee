"""The raster operations' jobs (`schemas/tools/raster_ops.py`): calc, terrain, clip and mosaic, and how the per-pixel
ones run by tiles."""

from schemas.tools.raster_ops import (
    RASTER_CALC,
    RASTER_CLIP,
    RASTER_MOSAIC,
    RASTER_TERRAIN,
    RasterCalcArgs,
    RasterCalcResult,
    RasterClipArgs,
    RasterClipResult,
    RasterMosaicArgs,
    RasterMosaicResult,
    RasterTerrainArgs,
    RasterTerrainResult,
)
from workers.gdal import calc, clip, mosaic, terrain
from workers.gdal.windowed import declare_tiles
from workers.jobkit.context import JobContext
from workers.jobs import job


@job(RASTER_CALC)
def raster_calc(args: RasterCalcArgs, ctx: JobContext) -> RasterCalcResult:
    """Evaluate `args.expression` over the inputs' bands and write a one-band GeoTIFF at `args.output`."""
    return calc.raster_calc(args, ctx)


@job(RASTER_TERRAIN)
def raster_terrain(args: RasterTerrainArgs, ctx: JobContext) -> RasterTerrainResult:
    """Derive `args.product` from the DEM at `args.uri` and write it as a GeoTIFF at `args.output`."""
    return terrain.raster_terrain(args, ctx)


@job(RASTER_CLIP)
def raster_clip(args: RasterClipArgs, ctx: JobContext) -> RasterClipResult:
    """Cut `args.uri` to `args.bounds` or to the polygons of `args.mask`; write a GeoTIFF at `args.output`."""
    return clip.raster_clip(args, ctx)


@job(RASTER_MOSAIC)
def raster_mosaic(args: RasterMosaicArgs, ctx: JobContext) -> RasterMosaicResult:
    """Merge `args.inputs` onto the first one's grid with `args.method` where they overlap."""
    return mosaic.raster_mosaic(args, ctx)


declare_tiles(RASTER_CALC, calc.calc_of, calc.calc_from_plan, calc.calculated, "inputs")
declare_tiles(RASTER_TERRAIN, terrain.terrain_of, terrain.terrain_from_plan, terrain.terrain_result, "uri")
declare_tiles(RASTER_MOSAIC, mosaic.mosaic_of, mosaic.mosaic_from_plan, mosaic.mosaicked, "inputs")
