"""Per-window raster jobs (`raster_calc`, `raster_terrain`, `raster_mosaic`; `vector_rasterize` whole only): an
output grid computed window by window, whole on one worker or by tiles across many, with the same windows either
way.

A `WindowOp` knows its output profile and computes one window of the output from its sources. The whole job walks
the tile grid (`GEOGATE_TILE_SIZE`) a row of windows at a time into one full-width buffer and streams it into the
file, so its sha256 is taken as it is written; a tiled call has each tile compute its window into the staging file
(`workers.gdal.staging`). Since every pixel is computed by the same code over the same window in both, the tiled
output is the whole one byte for byte (`tests/unit/workers/gdal/test_tiled_analysis.py`).
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import rasterio
import rasterio.shutil
from pydantic import BaseModel, JsonValue
from rasterio.windows import Window

from schemas.tools.base import ToolSpec
from schemas.tools.raster import OutputRef
from schemas.tools.tiling import TileArgs, TileResult, TileWindow
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.errors import writing
from workers.gdal.outputs import file_ref, streamed
from workers.gdal.staging import assembly_target, publish, stage, staged, write_window
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.files import atomic_output, output_path
from workers.jobkit.limits import check_raster
from workers.jobkit.write_digest import WriteDigest
from workers.tiling.declare import Plan, tiler
from workers.tiling.grid import check_grid, parts_folder, root_of, tile_side, windows, worth_tiling


class WindowOp(Protocol):
    """One output raster, computed window by window."""

    profile: dict[str, Any]
    """The output's rasterio profile (tiled 256, pixel-interleaved when it has several bands, `compress` when
    asked)."""

    def compute(self, window: TileWindow) -> np.ndarray:
        """The output's pixels in `window`, shape (bands, height, width), in the output dtype."""
        ...

    def valid(self, block: np.ndarray) -> int:
        """How many pixels of a computed block are not nodata."""
        ...

    def to_plan(self) -> dict[str, JsonValue]: ...

    def close(self) -> None: ...


def output_profile(like: rasterio.DatasetReader, dtype: str, nodata: float | None, compression: str) -> dict[str, Any]:
    """A one-band tiled GeoTIFF on `like`'s grid."""
    profile = {"driver": "GTiff", "dtype": dtype, "count": 1, "crs": like.crs, "transform": like.transform}
    profile |= {"width": like.width, "height": like.height, "nodata": nodata, "tiled": True, "bigtiff": "IF_SAFER"}
    profile |= {"blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS, "interleave": "band"}
    return profile | ({"compress": compression} if compression != "none" else {})


def shown_nodata(nodata: float | None) -> float | str | None:
    """A nodata value as results show it: NaN has no JSON number, so it is the string "NaN"."""
    return "NaN" if nodata is not None and np.isnan(nodata) else nodata


def count_valid(block: np.ndarray, nodata: float | None) -> int:
    if nodata is None:
        return int(block.size)
    if np.isnan(nodata):
        return int(block.size - np.count_nonzero(np.isnan(block)))
    return int(block.size - np.count_nonzero(block == nodata))


def write_whole(
    op: WindowOp, target: Path, ctx: JobContext, copy: dict[str, Any] | None = None
) -> tuple[OutputRef, int]:
    """Compute every window of the tile grid, a row of windows at a time, into `target` (atomically); the output's
    description and its count of valid pixels. With `copy` (GDAL's options, with `driver`: a COG), the windows go
    to a staged GeoTIFF beside the temporary output, which GDAL then copies into that format."""
    profile = op.profile
    with atomic_output(Path(pinned(target, "output")), ctx.fence) as tmp:
        if copy is None:
            writer = WriteDigest(tmp)
            with writing(), rasterio.open(tmp, "w", **streamed(profile, writer)) as dst:
                valid = _write_rows(op, dst, ctx)
            digest = writer.hexdigest()
        else:
            valid, digest = _write_copied(op, tmp, copy, ctx), None
    return file_ref(target, "GTiff", digest), valid


def _write_copied(op: WindowOp, tmp: Path, copy: dict[str, Any], ctx: JobContext) -> int:
    staged = tmp.with_name(tmp.name.replace(".partial", ".stage.partial"))  # a later attempt sweeps it too
    try:
        with writing(), rasterio.open(staged, "w", **op.profile) as dst:
            valid = _write_rows(op, dst, ctx)
        with writing():
            rasterio.shutil.copy(staged, tmp, **copy)
    finally:
        staged.unlink(missing_ok=True)
    ctx.progress(1, 1, f"wrote {copy['driver']}")  # where a cancel lands, before the output takes its name
    return valid


def _write_rows(op: WindowOp, dst: Any, ctx: JobContext) -> int:
    profile = op.profile
    tiles, columns, rows = windows(profile["width"], profile["height"], tile_side(ctx, ALIGN_ROWS))
    valid = 0
    for row in range(rows):
        cells = tiles[row * columns : (row + 1) * columns]
        strip = np.empty((profile["count"], cells[0].height, profile["width"]), dtype=profile["dtype"])
        for cell in cells:
            block = op.compute(cell)
            strip[:, :, cell.col_off : cell.col_off + cell.width] = block
            valid += op.valid(block)
        dst.write(strip, window=Window(0, cells[0].row_off, profile["width"], cells[0].height))
        ctx.progress(row + 1, rows, f"computed {row + 1}/{rows} rows of windows")  # where a cancel lands
    return valid


def check_bounds(op: WindowOp, ctx: JobContext, field: str) -> None:
    """Refuse an output past `GEOGATE_LIMIT_OUTPUT_BYTES` or a grid past `GEOGATE_LIMIT_TILES`, on `field`.

    Raises:
        JobFailed: `limit.output_bytes` or `limit.tiles`.
    """
    profile = op.profile
    check_raster(ctx, profile["width"], profile["height"], profile["count"], profile["dtype"], field)
    check_grid(ctx, profile["width"], profile["height"], tile_side(ctx, ALIGN_ROWS), field)


def run_whole(
    open_op: Callable[[Any, JobContext], WindowOp],
    args: Any,
    ctx: JobContext,
    field: str,
    copy: dict[str, Any] | None = None,
) -> tuple[OutputRef, int, dict[str, JsonValue]]:
    """A call run whole: its output checked, its op opened by `open_op`, its bounds checked (the grid is set by
    argument `field`), every window written (`write_whole`, copied into another format by `copy`); the output, its
    count of valid pixels and the op's plan (what a tiled call's tiles would have been given)."""
    dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    op = open_op(args, ctx)
    try:
        check_bounds(op, ctx, field)
        return *write_whole(op, dst_path, ctx, copy), op.to_plan()
    finally:
        op.close()


def declare_tiles(
    spec: ToolSpec,
    open_op: Callable[[Any, JobContext], WindowOp],
    from_plan: Callable[[dict[str, JsonValue], JobContext], WindowOp],
    result: Callable[[Any, OutputRef, int, dict[str, JsonValue]], BaseModel],
    field: str,
    copy: dict[str, Any] | None = None,
) -> None:
    """Register tool `spec` as tiled: `open_op` makes its op from the call's arguments (planner), `from_plan` from
    the plan a tile carries, `result` the tool's result from the output, its count of valid pixels and the op's
    plan; `field` is the argument that sets the output grid (named when a bound refuses it); `copy` GDAL's options
    (with `driver`) of the output the fan-in copies the staging file into, else it is a GeoTIFF."""

    def plan(args: Any, ctx: JobContext) -> Plan | None:
        dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
        op = open_op(args, ctx)
        try:
            check_bounds(op, ctx, field)
            profile = op.profile
            side = tile_side(ctx, ALIGN_ROWS)
            if not worth_tiling(ctx, profile["width"], profile["height"], side, on_objects=True):
                return None
            folder = parts_folder(root_of(dst_path, ctx.roots), ctx.call_id)
            tiles, columns, rows = windows(profile["width"], profile["height"], side)
            shared = {**op.to_plan(), **stage(folder, profile, tiles), "compress": profile.get("compress")}
            return Plan(tiles, columns, rows, side, profile["width"], profile["height"], folder, shared)
        finally:
            op.close()

    def run(args: TileArgs, ctx: JobContext) -> TileResult:
        op = from_plan(args.plan, ctx)
        try:
            block = op.compute(args.window)
            valid = op.valid(block)
        finally:
            op.close()
        ctx.progress(0, 1, f"computed {args.window.describe()}")  # where a cancel of the parent lands
        write_window(str(args.plan["staging"]), block, args.window, args.index, ctx)
        return TileResult(index=args.index, window=args.window, partial={"valid": valid})

    def assemble(args: Any, first: TileArgs, tiles: list[TileResult], ctx: JobContext) -> BaseModel:
        staging = staged(first.plan, tiles)
        dst_path = assembly_target(args.output, staging, ctx, overwrite=args.overwrite)
        compress = first.plan.get("compress")
        options = copy if copy is not None else None if compress is None else _compressed_copy(str(compress))
        sha256 = publish(staging, dst_path, ctx, copy=options)
        valid = sum(int(t.partial["valid"]) for t in tiles)  # type: ignore[call-overload,index]
        return result(args, file_ref(dst_path, "GTiff", sha256), valid, first.plan)

    tiler(spec, plan=plan, run=run, assemble=assemble)


def _compressed_copy(compress: str) -> dict[str, Any]:
    options = {"driver": "GTiff", "tiled": True, "blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS}
    return options | {"bigtiff": "IF_SAFER", "compress": compress, "num_threads": "ALL_CPUS"}
