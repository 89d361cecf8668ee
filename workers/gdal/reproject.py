"""Job `raster_reproject`: GDAL warp through rasterio, one output strip at a time, into an atomic GeoTIFF."""

import math
from pathlib import Path

import numpy as np
import rasterio
from affine import Affine
from pyproj import CRS
from rasterio.enums import Resampling as RioResampling
from rasterio.warp import calculate_default_transform
from rasterio.warp import reproject as warp

from schemas.tools.raster import RasterReprojectArgs, RasterReprojectResult
from workers.confine import pinned
from workers.context import JobContext
from workers.errors import JobFailed
from workers.files import WriteDigest, atomic_output, output_path, resolve_in_workspace
from workers.gdal.blocks import ALIGN_ROWS, strips
from workers.gdal.errors import open_raster, parse_crs, reading, require_georeferenced, writing
from workers.gdal.outputs import file_ref, streamed
from workers.jobs import job

Grid = tuple[Affine, int, int]


def source_crs(src: rasterio.DatasetReader, override: str | None) -> CRS:
    """The CRS to warp from: `src_crs` when given, else the raster's own.

    Raises:
        JobFailed: `crs.unknown` for a bad override, `crs.missing` when neither exists.
    """
    if override is not None:
        return parse_crs(override, "src_crs")
    if src.crs is None:
        raise JobFailed(
            "crs.missing", "src_crs: the raster has no CRS; pass src_crs to say what it is", field="src_crs"
        )
    return CRS.from_user_input(src.crs.to_wkt())


def _over_bounds(bounds: list[float], xres: float, yres: float) -> Grid:
    left, bottom, right, top = bounds
    width, height = max(1, math.ceil((right - left) / xres - 1e-9)), max(1, math.ceil((top - bottom) / yres - 1e-9))
    return Affine(xres, 0.0, left, 0.0, -yres, top), width, height


def target_grid(src: rasterio.DatasetReader, src_crs: CRS, args: RasterReprojectArgs) -> Grid:
    """The output transform and size: GDAL's suggestion, constrained by `resolution`, `width`/`height`, `bounds`."""
    dst_crs = parse_crs(args.dst_crs, "dst_crs")
    if args.bounds is not None and args.width is not None and args.height is not None:
        left, bottom, right, top = args.bounds
        xres, yres = (right - left) / args.width, (top - bottom) / args.height
        return Affine(xres, 0.0, left, 0.0, -yres, top), args.width, args.height
    sized = {"dst_width": args.width, "dst_height": args.height} if args.bounds is None else {}
    transform, width, height = calculate_default_transform(
        src_crs, dst_crs, src.width, src.height, *src.bounds, resolution=args.resolution, **sized
    )
    if args.bounds is None:
        return transform, width, height
    return _over_bounds(args.bounds, *(args.resolution or (transform.a, -transform.e)))


def _profile(src: rasterio.DatasetReader, grid: Grid, dst_crs: CRS, nodata: float | None) -> dict:
    transform, width, height = grid
    profile = {"driver": "GTiff", "dtype": src.dtypes[0], "count": src.count, "crs": dst_crs, "nodata": nodata}
    profile |= {"transform": transform, "width": width, "height": height, "tiled": True, "bigtiff": "IF_SAFER"}
    profile |= {"blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS}
    if src.compression is not None:
        profile["compress"] = src.compression.value
    return profile


def _warp(
    src: rasterio.DatasetReader, tmp: Path, src_crs: CRS, profile: dict, args: RasterReprojectArgs, ctx: JobContext
) -> str | None:
    """One GDAL warp per strip of the output, each into memory and then into its rows of the file, top to bottom.

    Returns the file's sha256 when it was taken as the file was written (an uncompressed output), else None.
    """
    transform, nodata, bands = profile["transform"], profile["nodata"], list(range(1, src.count + 1))
    windows = strips(profile["height"], profile["width"])
    digest = WriteDigest(tmp)
    with rasterio.open(tmp, "w", **streamed(profile, digest)) as dst:
        for done, window in enumerate(windows, start=1):
            block = np.empty((src.count, window.height, window.width), dtype=profile["dtype"])
            with reading(Path(src.name)):
                warp(
                    rasterio.band(src, bands), block, src_crs=src_crs, dst_crs=profile["crs"], dst_nodata=nodata,
                    dst_transform=transform @ Affine.translation(0, window.row_off),
                    resampling=RioResampling[args.resampling.value],
                )  # fmt: skip
            with writing():
                dst.write(block, window=window)
            ctx.progress(done, len(windows), f"warped {done}/{len(windows)} strips")  # also where a cancel lands
    return digest.hexdigest()


def _bounds(grid: Grid) -> list[float]:
    transform, width, height = grid
    return [transform.c, transform.f + transform.e * height, transform.c + transform.a * width, transform.f]


@job("raster_reproject")
def raster_reproject(args: RasterReprojectArgs, ctx: JobContext) -> RasterReprojectResult:
    """Warp `args.uri` into `args.dst_crs`, strip by strip, and write a tiled GeoTIFF at `args.output`.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable source,
            an unknown or missing CRS, or a GDAL write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src_path = resolve_in_workspace(args.uri, ctx.roots)
    dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    dst_crs = parse_crs(args.dst_crs, "dst_crs")
    with open_raster(src_path) as src:
        require_georeferenced(src)
        src_crs = source_crs(src, args.src_crs)
        with reading(src_path, "uri"):
            grid = target_grid(src, src_crs, args)
        profile = _profile(src, grid, dst_crs, args.nodata if args.nodata is not None else src.nodata)
        with atomic_output(Path(pinned(dst_path, "output")), ctx.fence) as tmp:
            sha256 = _warp(src, tmp, src_crs, profile, args, ctx)
    return RasterReprojectResult(
        output=file_ref(dst_path, "GTiff", sha256),
        src_crs=src_crs.to_string(),
        dst_crs=args.dst_crs,
        resampling=args.resampling.value,
        transform=list(grid[0])[:6],
        width=grid[1],
        height=grid[2],
        bounds=_bounds(grid),
    )
