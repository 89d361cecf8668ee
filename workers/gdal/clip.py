"""Job `raster_clip`: a raster cut to a box (a window of its own grid) or masked and cropped to a polygon layer
(rasterio's `mask`), into an atomic GeoTIFF."""

import math
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import rasterio.features
import rasterio.mask
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import ProjError
from rasterio.errors import WindowError
from rasterio.warp import transform_bounds
from rasterio.windows import Window
from rasterio.windows import transform as window_transform

from schemas.tools.base import Reprojection
from schemas.tools.raster_ops import RasterClipArgs, RasterClipResult
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.errors import open_raster, parse_crs, reading, require_georeferenced, writing
from workers.gdal.outputs import file_ref
from workers.gdal.vector_io import read_layer
from workers.gdal.windowed import count_valid
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output, output_path, resolve_in_workspace
from workers.jobkit.limits import check_raster, widest

_EPSILON = 1e-9
"""Pixels a box edge overlaps by less than this are not kept (float noise of bounds given at pixel edges)."""


def fill_value(src: rasterio.DatasetReader, nodata: float | None) -> float:
    """The output's nodata: the one asked for, the raster's own, else NaN for floats and 0 for integers."""
    if nodata is not None:
        return nodata
    if src.nodata is not None:
        return float(src.nodata)
    return float("nan") if np.dtype(src.dtypes[0]).kind == "f" else 0.0


def box_window(src: rasterio.DatasetReader, args: RasterClipArgs) -> Window:
    """The window of every pixel the box touches, within the raster.

    Raises:
        JobFailed: `crs.unknown` for a bad `bounds_crs`, `clip.no_overlap` (field `bounds`) when the box misses.
    """
    assert args.bounds is not None
    bounds = args.bounds
    if args.bounds_crs is not None:
        given = parse_crs(args.bounds_crs, "bounds_crs")
        if src.crs is None:
            raise JobFailed("crs.missing", "bounds_crs: the raster has no CRS to transform into", field="bounds_crs")
        bounds = list(transform_bounds(given, src.crs, *bounds, densify_pts=21))
    inverse = ~src.transform
    cols, rows = zip(*(inverse * (x, y) for x in bounds[0::2] for y in bounds[1::2]), strict=True)
    left, right = max(math.floor(min(cols) + _EPSILON), 0), min(math.ceil(max(cols) - _EPSILON), src.width)
    top, bottom = max(math.floor(min(rows) + _EPSILON), 0), min(math.ceil(max(rows) - _EPSILON), src.height)
    if left >= right or top >= bottom:
        raise no_overlap(src, args)
    return Window(left, top, right - left, bottom - top)


def no_overlap(src: rasterio.DatasetReader, args: RasterClipArgs) -> JobFailed:
    """`clip.no_overlap` on `bounds`, with what would be valid: the raster's bounds in the bounds' CRS
    (`details.valid`, `details.crs`)."""
    crs = args.bounds_crs or (src.crs.to_string() if src.crs is not None else None)
    valid = list(src.bounds) if args.bounds_crs is None else transform_bounds(src.crs, crs, *src.bounds, densify_pts=21)
    valid = [round(v, 9) for v in valid]
    where = f" in {crs}" if crs else ""
    message = f"bounds: {args.bounds} do not meet the raster, which covers {valid}{where}"
    return JobFailed("clip.no_overlap", message, field="bounds", details={"valid": valid, "crs": crs})


def mask_shapes(
    src: rasterio.DatasetReader, args: RasterClipArgs, ctx: JobContext
) -> tuple[list[Any], list[Reprojection]]:
    """The mask layer's polygons, in the raster's CRS, and their reprojection when they had to be transformed.

    Raises:
        JobFailed: the layer cannot be read, has no polygons, or cannot be transformed.
    """
    assert args.mask is not None
    path = resolve_in_workspace(args.mask, ctx.roots, field="mask")
    layer = read_layer(path, args.layer, JobContext(ctx.call_id, ctx.roots), field="mask")
    polygons = [g for g in layer.geometry if g is not None and shapely.get_dimensions(g) == 2]
    if not polygons:
        raise JobFailed("mask.invalid", f"mask: {args.mask!r} has no polygons", field="mask")
    reprojected = []
    if layer.crs and src.crs is not None and CRS(layer.crs) != CRS(src.crs.to_wkt()):
        reprojected.append(Reprojection(input="mask", from_crs=layer.crs, to_crs=src.crs.to_string()))
        transformer = Transformer.from_crs(CRS(layer.crs), CRS(src.crs.to_wkt()), always_xy=True)
        try:
            polygons = list(shapely.transform(np.array(polygons), lambda xy: np.column_stack(
                transformer.transform(*xy.T, errcheck=True))))  # fmt: skip
        except ProjError as exc:
            raise JobFailed("crs.transform_failed", f"mask: PROJ cannot transform it: {exc}", field="mask") from exc
    return [shapely.geometry.mapping(g) for g in polygons], reprojected


def _clipped(src: rasterio.DatasetReader, path: Path, args: RasterClipArgs, ctx: JobContext, fill: float) -> tuple:
    """The output's pixels and transform, its size checked before a pixel is read.

    Raises:
        JobFailed: `limit.output_bytes` on `bounds`, `mask` or `crop` (what sets the output's size).
    """
    if args.bounds is not None:
        window = box_window(src, args)
        _check_size(src, window, "bounds", ctx)
        with reading(path):
            return src.read(window=window), window_transform(window, src.transform), _bounds_moved(src, args)
    shapes, reprojected = mask_shapes(src, args, ctx)
    ctx.progress(1, 3, f"mask of {len(shapes)} polygons read")
    _check_size(src, _mask_window(src, shapes, args), "mask" if args.crop else "crop", ctx)
    try:
        with reading(path):
            data, transform = rasterio.mask.mask(src, shapes, crop=args.crop, all_touched=args.all_touched, nodata=fill)
            return data, transform, reprojected
    except ValueError as exc:  # "Input shapes do not overlap raster."
        raise JobFailed("clip.no_overlap", f"mask: {exc}", field="mask") from exc


def _bounds_moved(src: rasterio.DatasetReader, args: RasterClipArgs) -> list[Reprojection]:
    if args.bounds_crs is None or src.crs is None or CRS(args.bounds_crs) == CRS(src.crs.to_wkt()):
        return []
    return [Reprojection(input="bounds", from_crs=args.bounds_crs, to_crs=src.crs.to_string())]


def _mask_window(src: rasterio.DatasetReader, shapes: list[Any], args: RasterClipArgs) -> Window:
    """The window `rasterio.mask.mask` writes: the polygons' bounding window with `crop`, else the whole raster."""
    whole = Window(0, 0, src.width, src.height)
    if not args.crop:
        return whole
    try:
        return rasterio.features.geometry_window(src, shapes).intersection(whole)
    except WindowError:
        return Window(0, 0, 0, 0)  # no overlap: `mask` says so


def _check_size(src: rasterio.DatasetReader, window: Window, field: str, ctx: JobContext) -> None:
    width, height = math.ceil(window.width), math.ceil(window.height)
    check_raster(ctx, width, height, src.count, widest(src.dtypes), field)


def _profile(src: rasterio.DatasetReader, data: np.ndarray, transform: Any, fill: float, compression: str) -> dict:
    height, width = data.shape[1:]
    profile = {"driver": "GTiff", "dtype": src.dtypes[0], "count": src.count, "crs": src.crs, "nodata": fill}
    profile |= {"transform": transform, "width": width, "height": height, "bigtiff": "IF_SAFER"}
    if width >= ALIGN_ROWS and height >= ALIGN_ROWS:
        profile |= {"tiled": True, "blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS}
    return profile | ({"compress": compression} if compression != "none" else {})


def raster_clip(args: RasterClipArgs, ctx: JobContext) -> RasterClipResult:
    """Cut `args.uri` to `args.bounds` or to the polygons of `args.mask`; write a GeoTIFF at `args.output`.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable raster or
            mask, a mask without polygons, bounds or polygons that miss the raster, a write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src_path = resolve_in_workspace(args.uri, ctx.roots)
    with open_raster(src_path) as src:
        require_georeferenced(src)
        if args.bounds is not None:
            box_window(src, args)  # a box that misses the raster is refused before a folder is made
        dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
        fill = fill_value(src, args.nodata)
        data, transform, reprojected = _clipped(src, src_path, args, ctx, fill)
        profile = _profile(src, data, transform, fill, args.compression)
    ctx.progress(2, 3, f"clipped to {profile['width']}×{profile['height']}")
    with (
        atomic_output(Path(pinned(dst_path, "output")), ctx.fence) as tmp,
        writing(),
        rasterio.open(tmp, "w", **profile) as dst,
    ):
        dst.write(data)
    width, height = profile["width"], profile["height"]
    return RasterClipResult(
        output=file_ref(dst_path, "GTiff"),
        width=width,
        height=height,
        bounds=list(rasterio.transform.array_bounds(height, width, transform))[:4],
        transform=list(transform)[:6],
        valid_pixels=count_valid(data[0], fill),
        reprojected=reprojected,
    )
