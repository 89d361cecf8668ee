"""`raster_reproject` by tiles: plan the output grid, warp one block-aligned window per tile, rename the result.

Each tile is one of the warps the whole job does window by window (`workers.gdal.reproject.Warp`), over the same
window of the same output grid: the result is the same pixels, whatever the kernel (GDAL's approximate transformer
interpolates over each warped window, so the windows must be the same ones for that).
"""

import rasterio

from schemas.tools.raster import RasterReprojectArgs, RasterReprojectResult
from schemas.tools.tiling import TileArgs, TileResult
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.errors import open_raster
from workers.gdal.outputs import file_ref
from workers.gdal.reproject import Warp, check_bounds, reprojected, warp_of
from workers.gdal.staging import assembly_target, publish, stage, staged, write_window
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.files import output_path, resolve_in_workspace
from workers.tiling.declare import Plan
from workers.tiling.grid import parts_folder, root_of, tile_side, windows, worth_tiling


def plan(args: RasterReprojectArgs, ctx: JobContext) -> Plan | None:
    """The output grid cut into tiles when it is large enough; the staging file made for them."""
    src_path = resolve_in_workspace(args.uri, ctx.roots)
    with open_raster(src_path) as src:
        spec, profile = warp_of(src, src_path, args)
    check_bounds(profile, args, ctx)
    dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    side = tile_side(ctx, ALIGN_ROWS)
    if not worth_tiling(ctx, profile["width"], profile["height"], side, on_objects=True):
        return None
    folder = parts_folder(root_of(dst_path, ctx.roots), ctx.call_id)
    tiles, columns, rows = windows(profile["width"], profile["height"], side)
    shared = {"source": objects.shown(src_path), **stage(folder, profile, tiles), "compress": profile.get("compress")}
    shared |= spec.to_plan()
    return Plan(tiles, columns, rows, side, profile["width"], profile["height"], folder, shared)


def run(args: TileArgs, ctx: JobContext) -> TileResult:
    """Warp one window of the output grid into memory, then into its blocks of the staging file."""
    plan, window = args.plan, args.window
    src_path = resolve_in_workspace(str(plan["source"]), ctx.roots)
    with open_raster(src_path) as src:
        block = Warp.from_plan(plan).window(src, window)
    ctx.progress(0, 1, f"warped {window.describe()}")  # where a cancel of the parent lands
    write_window(str(plan["staging"]), block, window, args.index, ctx)
    return TileResult(index=args.index, window=window)


def assemble(
    args: RasterReprojectArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext
) -> RasterReprojectResult:
    """The staging file becomes the output: renamed when uncompressed, else copied with the source's compression."""
    plan = first.plan
    staging = staged(plan, tiles)
    dst_path = assembly_target(args.output, staging, ctx, overwrite=args.overwrite)
    with rasterio.open(staging) as out:
        profile = out.profile
    compress = plan.get("compress")
    sha256 = publish(staging, dst_path, ctx, copy=None if compress is None else _gtiff_copy(profile, str(compress)))
    return reprojected(args, Warp.from_plan(plan), profile, file_ref(dst_path, "GTiff", sha256))


def _gtiff_copy(profile: dict, compress: str) -> dict:
    return {
        "driver": "GTiff",
        "tiled": True,
        "blockxsize": profile["blockxsize"],
        "blockysize": profile["blockysize"],
        "bigtiff": "IF_SAFER",
        "compress": compress,
        "num_threads": "ALL_CPUS",
    }
