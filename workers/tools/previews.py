"""The preview tools' jobs (`schemas/tools/previews.py`): COG validation and quicklooks of rasters and layers."""

from schemas.tools.previews import (
    COG_VALIDATE,
    RASTER_PREVIEW,
    VECTOR_PREVIEW,
    CogValidateArgs,
    CogValidateResult,
    RasterPreviewArgs,
    RasterPreviewResult,
    VectorPreviewArgs,
    VectorPreviewResult,
)
from workers.gdal import cog, preview
from workers.jobkit.context import JobContext
from workers.jobs import job


@job(COG_VALIDATE)
def cog_validate(args: CogValidateArgs, ctx: JobContext) -> CogValidateResult:
    """Whether `args.uri` is a valid COG (rio-cogeo), its errors and warnings, block size, overviews, compression."""
    return cog.cog_validate(args, ctx)


@job(RASTER_PREVIEW)
def raster_preview(args: RasterPreviewArgs, ctx: JobContext) -> RasterPreviewResult:
    """A quicklook of `args.uri` (stretch, hillshade or RGB), at most `args.max_size` a side, PNG or JPEG."""
    return preview.raster_preview(args, ctx)


@job(VECTOR_PREVIEW)
def vector_preview(args: VectorPreviewArgs, ctx: JobContext) -> VectorPreviewResult:
    """A drawing of a layer's geometries, at most `args.max_size` a side, PNG or JPEG."""
    return preview.vector_preview(args, ctx)
