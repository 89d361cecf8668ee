"""The grid of a tiled call: block-aligned windows, the tile size for a block size, and the hidden parts folder."""

import math
import shutil
from pathlib import Path

from geogate.settings import Settings
from schemas.tools.tiling import TileWindow
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.limits import check_tiles
from workers.tiling import part_objects

PARTS = Path(".geogate") / "tiles"
"""Below a workspace root: one hidden folder per tiled call, where its tiles leave their parts."""

_DEFAULTS = Settings.defaults()


def settings_of(ctx: JobContext) -> Settings:
    return ctx.settings or _DEFAULTS


def tile_side(ctx: JobContext, block: int) -> int:
    """`GEOGATE_TILE_SIZE` rounded down to a multiple of `block` (at least one block), so tiles own whole blocks."""
    return max(block, settings_of(ctx).tile_size // block * block)


def worth_tiling(ctx: JobContext, width: int, height: int, side: int, *, on_objects: bool = False) -> bool:
    """At least `GEOGATE_TILE_MIN_PIXELS` and more than one tile: else the call runs whole. A call that reads or
    writes in an object-storage root runs whole unless its tool says it tiles there (`on_objects`: its plan names
    objects by URI and its parts are objects, `workers.gdal.staging.stage`); else its tiles would need a parts
    folder every worker reaches."""
    big = width * height >= settings_of(ctx).tile_min_pixels and (width > side or height > side)
    return big and (on_objects or not objects.touched())


def tile_shape(width: int, height: int, side: int) -> tuple[int, int]:
    """A window's width and height: `side`×`side`, or across a grid thinner than `side` a strip of about `side`²
    pixels whose length is a whole number of `side`s (so of blocks), so that a thin grid is not cut into slivers."""
    if height < side < width:
        return side * max(1, side // height), side
    if width < side < height:
        return side, side * max(1, side // width)
    return side, side


def count_windows(width: int, height: int, side: int) -> int:
    """How many windows `windows` would cut the grid into."""
    tile_width, tile_height = tile_shape(width, height, side)
    return math.ceil(width / tile_width) * math.ceil(height / tile_height)


def check_grid(ctx: JobContext, width: int, height: int, side: int, field: str) -> None:
    """Refuse a grid of more windows than `GEOGATE_LIMIT_TILES`, run as tiles or whole (the same windows).

    Raises:
        JobFailed: `limit.tiles`, on `field` (the argument that sets the grid).
    """
    check_tiles(ctx, count_windows(width, height, side), field, side)


def windows(width: int, height: int, side: int) -> tuple[list[TileWindow], int, int]:
    """Row-major windows of `tile_shape` over a `width`×`height` grid (the last row and column may be narrower)."""
    tile_width, tile_height = tile_shape(width, height, side)
    columns, rows = math.ceil(width / tile_width), math.ceil(height / tile_height)
    grid = [
        TileWindow(
            col_off=c * tile_width,
            row_off=r * tile_height,
            width=min(tile_width, width - c * tile_width),
            height=min(tile_height, height - r * tile_height),
        )
        for r in range(rows)
        for c in range(columns)
    ]
    return grid, columns, rows


def root_of(path: Path, roots: list[Path]) -> Path:
    """The workspace root that holds `path` (checked paths always have one)."""
    return next(root for root in roots if path.is_relative_to(root))


def parts_folder(root: Path, call_id: str) -> Path:
    """The hidden folder of call `call_id`'s parts under workspace `root` (created; safe to call again)."""
    folder = root / PARTS / call_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def remove_named_parts(folder: str) -> None:
    """Remove a call's parts where its fan-out named them: a parts folder, or a prefix of objects."""
    if part_objects.is_object(folder):
        part_objects.remove(folder)
    else:
        remove_parts(Path(folder))


def remove_parts(folder: Path) -> None:
    """Remove a call's parts folder, and `.geogate/tiles` and `.geogate` above it when nothing else is left there
    (a planner that needs them again makes them again)."""
    shutil.rmtree(folder, ignore_errors=True)
    for parent in (folder.parent, folder.parent.parent):
        try:
            parent.rmdir()
        except OSError:
            return  # not empty (another call's parts, or anything else under .geogate), or already gone
