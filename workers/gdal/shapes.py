"""Jobs between rasters and vectors: `raster_polygonize` (rasterio.features.shapes, GDAL's polygonizer),
`vector_rasterize`'s grid and values (its job is `workers.gdal.rasterize`) and `raster_contours` (contourpy).

Contours: this machine's GDAL comes inside rasterio's and pyogrio's wheels, without the `osgeo` bindings or the
`gdal_contour` program, and rasterio does not wrap `GDALContourGenerate`. contourpy (matplotlib's contouring
engine, a maintained compiled library) traces the lines by marching squares over the pixel centres; nodata cells
are masked out; the pixel coordinates are mapped through the raster's affine transform.
"""

import math
from pathlib import Path

import contourpy
import numpy as np
import rasterio
import rasterio.features
import shapely
from affine import Affine

from schemas.tools.analysis import (
    RasterContoursArgs,
    RasterContoursResult,
    RasterPolygonizeArgs,
    RasterPolygonizeResult,
    RasterToVectorArgs,
)
from workers.gdal.errors import check_bands, open_raster, require_georeferenced
from workers.gdal.outputs import file_ref
from workers.gdal.polygon_floor import polygon_floor
from workers.gdal.vector_io import Layer, output_driver, write_layer
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import output_path, raster_input
from workers.jobkit.limits import FeatureCount, check_raster, widest

SHAPES_DTYPES = ("uint8", "int16", "uint16", "int32", "float32")
"""What `rasterio.features.shapes` takes; others are cast when that loses nothing."""
REPORT_EVERY = 5000
"""Polygons or lines between progress reports."""


def _band_to_trace(
    args: RasterToVectorArgs, ctx: JobContext, traced_as: str | None = None
) -> tuple[Path, str, np.ma.MaskedArray, Affine, str | None]:
    """The output and its driver (checked first), then the band as a masked array with its transform and CRS; the
    band is held whole (in `traced_as`, else its own dtype), so its size is checked before it is read.

    Raises:
        JobFailed: `limit.output_bytes` (field `uri`) for a band past `GEOGATE_LIMIT_OUTPUT_BYTES`, or as below.
    """
    source = raster_input(args.uri, ctx.roots, ctx.settings)
    dst = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    driver = output_driver(args.driver, dst)
    with open_raster(source) as src:
        check_bands([args.band], src.count, "band")
        require_georeferenced(src)
        dtype = widest([traced_as or src.dtypes[args.band - 1], src.dtypes[args.band - 1]])
        check_raster(ctx, src.width, src.height, 1, dtype, "uri", read=True)
        return dst, driver, src.read(args.band, masked=True), src.transform, _crs_text(src)


def _crs_text(src: rasterio.DatasetReader) -> str | None:
    return src.crs.to_string() if src.crs else None


# --- raster_polygonize ------------------------------------------------------------------------------------------


def _shapes_array(data: np.ndarray) -> np.ndarray:
    if data.dtype.name in SHAPES_DTYPES:
        return data
    target = "float32" if data.dtype.kind == "f" else "int32"
    cast = data.astype(target)
    if not np.array_equal(cast.astype(data.dtype), data, equal_nan=data.dtype.kind == "f"):
        raise JobFailed(
            "option.unsupported", f"band: {data.dtype} values do not fit {target} for polygonizing", field="band"
        )
    return cast


def raster_polygonize(args: RasterPolygonizeArgs, ctx: JobContext) -> RasterPolygonizeResult:
    """Polygons of connected equal-valued pixels of `args.band`, with the value in `args.field_name`.

    Raises:
        JobFailed: a path outside the workspace or a host not allowed, an unreadable raster, a missing band, an
            existing output without `overwrite`, a dtype that cannot be polygonized losslessly.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    dst, driver, band, transform, crs = _band_to_trace(args, ctx)
    data, mask = band.data, ~np.ma.getmaskarray(band)
    if data.dtype.kind == "f":
        mask &= np.isfinite(data)
    array, count = _shapes_array(data), FeatureCount(ctx, "uri", "polygons")
    count.at_least(polygon_floor(array, mask, args.connectivity))  # before GDAL builds them all in memory
    ctx.progress(0, None, "tracing polygons")
    geoms, values = [], []
    for geojson, value in rasterio.features.shapes(
        array, mask=mask, connectivity=args.connectivity, transform=transform
    ):
        count.add()
        geoms.append(shapely.geometry.shape(geojson))
        values.append(value)
        if len(geoms) % REPORT_EVERY == 0:
            ctx.progress(len(geoms), None, f"traced {len(geoms)} polygons")
    column = np.array(values, dtype="float64" if data.dtype.kind == "f" else "int64")
    layer = Layer(dst.stem, driver, crs, [args.field_name], [column], np.array(geoms, dtype=object))
    write_layer(layer, dst, driver, crs, fence=ctx.fence)
    return RasterPolygonizeResult(
        output=file_ref(dst, driver), feature_count=len(geoms), crs=crs, band=args.band,
        connectivity=args.connectivity, distinct_values=len(set(values)),
    )  # fmt: skip


# --- raster_contours --------------------------------------------------------------------------------------------


def contour_levels(args: RasterContoursArgs, low: float, high: float) -> list[float]:
    """`args.levels`, or `base + k·interval` from the data's minimum to its maximum.

    Raises:
        JobFailed: the interval makes more than `args.max_levels` levels.
    """
    if args.levels is not None:
        return sorted(set(args.levels))
    assert args.interval is not None
    first, last = math.ceil((low - args.base) / args.interval), math.floor((high - args.base) / args.interval)
    if last - first + 1 > args.max_levels:
        raise JobFailed(
            "option.unsupported",
            f"interval: {args.interval:g} makes {last - first + 1} levels over {low:g}..{high:g}; "
            f"at most {args.max_levels} (raise max_levels or the interval)",
            field="interval",
        )
    return [args.base + k * args.interval for k in range(first, last + 1)]


def _level_lines(
    generator: contourpy.ContourGenerator, level: float, transform: Affine, count: FeatureCount
) -> np.ndarray:
    """The level's lines of at least two points as LineStrings in the raster's CRS, counted (`count`) before any
    is made: contourpy gives all their points in one array and where each line starts."""
    (points,), (offsets,) = generator.lines(level)
    if points is None:
        return np.empty(0, dtype=object)
    lengths = np.diff(offsets)
    count.add(int(np.count_nonzero(lengths >= 2)))
    line = np.repeat(np.arange(len(lengths)), lengths)
    kept = lengths[line] >= 2
    cols, rows = points[kept, 0] + 0.5, points[kept, 1] + 0.5  # contourpy's x, y are column and row of pixel centres
    xs, ys = transform * (cols, rows)
    numbered = np.unique(line[kept], return_inverse=True)[1]
    return shapely.linestrings(np.column_stack([xs, ys]), indices=numbered)


def raster_contours(args: RasterContoursArgs, ctx: JobContext) -> RasterContoursResult:
    """Contour lines of `args.band` at `args.interval` or `args.levels`, one feature per line with its level.

    Raises:
        JobFailed: a path outside the workspace or a host not allowed, an unreadable raster, a missing band, too
            many levels, an existing output without `overwrite`.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    dst, driver, band, transform, crs = _band_to_trace(args, ctx, traced_as="float64")
    data = band.astype("float64")
    data = np.ma.masked_invalid(data)
    valid = data.compressed()
    levels = contour_levels(args, float(valid.min()), float(valid.max())) if valid.size else []
    generator = contourpy.contour_generator(z=data, line_type="ChunkCombinedOffset")  # one chunk: the whole band
    count = FeatureCount(ctx, "interval" if args.levels is None else "levels", "lines")
    geoms, values, traced = [], [], []
    for n, level in enumerate(levels, start=1):
        lines = _level_lines(generator, level, transform, count)
        geoms.append(lines)
        values.append(np.full(len(lines), level, dtype="float64"))
        if len(lines):
            traced.append(level)
        ctx.progress(n, len(levels), f"level {level:g}: {len(lines)} lines")
    column, geometry = np.concatenate([[], *values]), np.concatenate([np.empty(0, dtype=object), *geoms])
    layer = Layer(dst.stem, driver, crs, [args.attribute], [column], geometry)
    write_layer(layer, dst, driver, crs, fence=ctx.fence)
    return RasterContoursResult(
        output=file_ref(dst, driver), feature_count=len(geometry), crs=crs, levels=traced,
        method="contourpy marching squares over pixel centres (linear interpolation), nodata masked",
    )  # fmt: skip
