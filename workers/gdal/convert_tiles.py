"""`raster_convert` to GeoTIFF or COG by tiles: each tile copies its block-aligned window of the source into the
staging file; the fan-in renames it (an uncompressed GeoTIFF) or has GDAL write the requested format from it
(compression, overviews, COG layout), which reads back the same pixels the whole job copies."""

import math
from pathlib import Path

import rasterio
from rasterio.enums import Resampling as RioResampling

from schemas.tools.raster import RasterConvertArgs, RasterConvertResult
from schemas.tools.tiling import TileArgs, TileResult
from workers.gdal.convert import check_bounds, check_driver, converted, copy_options, gtiff_profile
from workers.gdal.errors import open_raster, reading, writing
from workers.gdal.staging import assembly_target, publish, stage, staged, write_window
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.files import output_path, resolve_in_workspace
from workers.tiling.declare import Plan
from workers.tiling.grid import parts_folder, root_of, tile_side, windows, worth_tiling

_TILED_DRIVERS = ("GTiff", "COG")


def plan(args: RasterConvertArgs, ctx: JobContext) -> Plan | None:
    """The source grid cut into tiles for a large GeoTIFF or COG output; other drivers run whole."""
    if args.driver not in _TILED_DRIVERS or (args.driver == "GTiff" and not args.tiled):
        return None
    check_driver(args)
    src_path = resolve_in_workspace(args.uri, ctx.roots)
    dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    with open_raster(src_path) as src:
        check_bounds(src, args, ctx)
        profile, tags = gtiff_profile(src, args, final=args.driver == "GTiff"), src.tags()
    side = tile_side(ctx, math.lcm(profile["blockxsize"], profile["blockysize"]))
    if not worth_tiling(ctx, profile["width"], profile["height"], side, on_objects=True):
        return None
    folder = parts_folder(root_of(dst_path, ctx.roots), ctx.call_id)
    tiles, columns, rows = windows(profile["width"], profile["height"], side)
    shared = {"source": objects.shown(src_path), **stage(folder, profile, tiles, tags)}
    return Plan(tiles, columns, rows, side, profile["width"], profile["height"], folder, shared)


def run(args: TileArgs, ctx: JobContext) -> TileResult:
    """Copy one window of the source into the staging file."""
    src_path = resolve_in_workspace(str(args.plan["source"]), ctx.roots)
    window = args.window
    with open_raster(src_path) as src, reading(src_path):
        data = src.read(window=rasterio.windows.Window(window.col_off, window.row_off, window.width, window.height))
    ctx.progress(0, 1, f"copied {window.describe()}")
    write_window(str(args.plan["staging"]), data, window, args.index, ctx)
    return TileResult(index=args.index, window=window)


def assemble(args: RasterConvertArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext) -> RasterConvertResult:
    """The staging file becomes the output, in the requested format, with its overviews."""
    staging = staged(first.plan, tiles)
    dst_path = assembly_target(args.output, staging, ctx, overwrite=args.overwrite)

    def overviews(tmp: Path) -> None:
        with writing(), rasterio.open(tmp, "r+") as dst:
            dst.build_overviews(args.overviews, RioResampling[args.overview_resampling.value])

    then = overviews if args.overviews and args.driver == "GTiff" else None
    return converted(dst_path, publish(staging, dst_path, ctx, copy=_copy(args, staging), then=then))


def _copy(args: RasterConvertArgs, staging: Path) -> dict | None:
    """GDAL's options to write the output from the staging file; None when the staging file is the output."""
    if args.driver == "COG":
        return {"driver": "COG", **copy_options(args)}
    if args.compression is None and not args.creation_options:
        return None
    with rasterio.open(staging) as src:
        layout = {k: src.profile[k] for k in ("tiled", "blockxsize", "blockysize", "interleave") if k in src.profile}
    options = {"compress": args.compression} if args.compression else {}
    if args.photometric is not None:
        options["photometric"] = args.photometric
    return {"driver": "GTiff", **layout, "bigtiff": "IF_SAFER", **options, **args.creation_options}
