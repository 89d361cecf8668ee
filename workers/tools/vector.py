"""The vector tools' jobs (`schemas/tools/vector.py`): metadata, convert, reproject, clip, buffer, simplify, derived
geometries and geodesic measures."""

from schemas.tools.vector import (
    VECTOR_BUFFER,
    VECTOR_CLIP,
    VECTOR_CONVERT,
    VECTOR_GEOMETRY,
    VECTOR_INFO,
    VECTOR_MEASURE,
    VECTOR_REPROJECT,
    VECTOR_SIMPLIFY,
    VectorBufferArgs,
    VectorBufferResult,
    VectorClipArgs,
    VectorClipResult,
    VectorConvertArgs,
    VectorConvertResult,
    VectorGeometryArgs,
    VectorGeometryResult,
    VectorInfoArgs,
    VectorInfoResult,
    VectorMeasureArgs,
    VectorMeasureResult,
    VectorReprojectArgs,
    VectorReprojectResult,
    VectorSimplifyArgs,
    VectorSimplifyResult,
)
from workers.gdal import info, vector_derive, vector_ops
from workers.jobkit.context import JobContext
from workers.jobs import job


@job(VECTOR_INFO)
def vector_info(args: VectorInfoArgs, ctx: JobContext) -> VectorInfoResult:
    """Describe one layer of a vector dataset: driver, layers, CRS, feature count, geometry type, bounds, fields."""
    return info.vector_info(args, ctx)


@job(VECTOR_CONVERT)
def vector_convert(args: VectorConvertArgs, ctx: JobContext) -> VectorConvertResult:
    """Copy one layer of `args.uri` into the format of `args.output` (or `args.driver`)."""
    return vector_ops.vector_convert(args, ctx)


@job(VECTOR_REPROJECT)
def vector_reproject(args: VectorReprojectArgs, ctx: JobContext) -> VectorReprojectResult:
    """Transform a layer's coordinates into `args.dst_crs` with PROJ, chunk by chunk."""
    return vector_ops.vector_reproject(args, ctx)


@job(VECTOR_CLIP)
def vector_clip(args: VectorClipArgs, ctx: JobContext) -> VectorClipResult:
    """Keep the features that intersect `args.bounds` or `args.mask`, cut to it."""
    return vector_ops.vector_clip(args, ctx)


@job(VECTOR_BUFFER)
def vector_buffer(args: VectorBufferArgs, ctx: JobContext) -> VectorBufferResult:
    """Buffer every geometry by `args.distance` in metres or CRS units, with the caps and joins asked for."""
    return vector_ops.vector_buffer(args, ctx)


@job(VECTOR_SIMPLIFY)
def vector_simplify(args: VectorSimplifyArgs, ctx: JobContext) -> VectorSimplifyResult:
    """Reduce vertex counts with Douglas–Peucker (GEOS) or Visvalingam–Whyatt, and/or snap vertices to a grid."""
    return vector_ops.vector_simplify(args, ctx)


@job(VECTOR_GEOMETRY)
def vector_geometry(args: VectorGeometryArgs, ctx: JobContext) -> VectorGeometryResult:
    """Replace every geometry by its centroid, representative point, convex hull, envelope or valid repair."""
    return vector_derive.vector_geometry(args, ctx)


@job(VECTOR_MEASURE)
def vector_measure(args: VectorMeasureArgs, ctx: JobContext) -> VectorMeasureResult:
    """Add each feature's geodesic area, length and perimeter on its CRS's ellipsoid."""
    return vector_derive.vector_measure(args, ctx)
