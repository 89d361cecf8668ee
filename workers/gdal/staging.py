"""The staging file of a tiled raster call: one uncompressed, tiled GeoTIFF in the call's parts folder that every
tile writes its own window of, in place, and that becomes the output by a rename (or a copy, for compressed or COG
outputs).

Writing in place instead of one part file per tile and a mosaic: the assembly of a 6598×9523 float32 output took
0.97 s as parts copied into a new file against none for a rename (measured on the 2-core dev machine), which is
most of what two workers save on such a warp. GDAL creates an uncompressed tiled GeoTIFF with every block
allocated, so a window that covers whole blocks is rewritten at the offsets it already has, and several processes
can write disjoint windows at once.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import rasterio.shutil
from rasterio.windows import Window

from schemas.tools.tiling import TileWindow
from workers.confine import pinned
from workers.context import JobContext
from workers.files import atomic_output
from workers.gdal import staging_digest
from workers.gdal.errors import writing

STAGING = "staging.tif"


def staging_profile(profile: dict[str, Any]) -> dict[str, Any]:
    """`profile` as an uncompressed tiled GeoTIFF (what tiles can write in place)."""
    kept = {k: v for k, v in profile.items() if k not in {"compress", "streamable_output", "opener", "predictor"}}
    return kept | {"driver": "GTiff", "tiled": True}


def create_staging(
    folder: Path, profile: dict[str, Any], windows: list[TileWindow], tags: dict[str, str] | None = None
) -> Path:
    """The call's staging file for tiles `windows`, created once: a plan made again (a re-dispatched parent) keeps
    what tiles wrote. It appears under its name complete or not at all (written aside, then linked into place).
    """
    staging = folder / STAGING
    if not staging.exists():
        _create(staging, profile, tags)
    staging_digest.lay_out(staging, windows)
    return staging


def _create(staging: Path, profile: dict[str, Any], tags: dict[str, str] | None) -> None:
    folder = staging.parent
    aside = folder / f".{STAGING}.{os.getpid()}"
    with writing(), rasterio.open(aside, "w", **staging_profile(profile)) as dst:
        if tags:
            dst.update_tags(**tags)
    try:
        os.link(aside, staging)
    except FileExistsError:
        pass  # another planner of this call got there first: its file is as good
    finally:
        aside.unlink(missing_ok=True)


def write_window(staging: Path, data: np.ndarray, window: TileWindow, index: int, ctx: JobContext) -> None:
    """Write tile `index`'s pixels into the staging file, in place, only while this tile's attempt is current; then
    take the file's digest on as far as its bytes are final (`workers.gdal.staging_digest`)."""
    if ctx.fence is not None:
        ctx.fence.check()
    target = Window(window.col_off, window.row_off, window.width, window.height)
    with writing(), rasterio.open(pinned(staging, "output"), "r+") as dst:
        dst.write(data, window=target)
    staging_digest.follow(staging, index)


def publish(
    staging: Path,
    target: Path,
    ctx: JobContext,
    *,
    copy: dict[str, Any] | None = None,
    then: Callable[[Path], None] | None = None,
) -> str | None:
    """The staging file becomes `target`: renamed as it is, or (`copy`: GDAL creation options, with `driver`)
    copied into the requested format first, and `then` given the file before it takes the target's name. Only
    while the fan-in is the call's current attempt. Returns the output's sha256 when it is the tiles' bytes as they
    wrote them (renamed, nothing done after), whose digest followed them; else None (the caller reads it back).

    Raises:
        JobFailed: `gdal.write_failed`; JobSuperseded: a re-dispatch made another fan-in current; JobCancelled: the
            call was cancelled (nothing is left at `target`).
    """
    with atomic_output(Path(pinned(target, "output")), ctx.fence) as tmp:
        if copy is None:
            shutil.move(staging, tmp)  # a rename: the parts folder is under the same workspace root
        else:
            with writing():
                rasterio.shutil.copy(staging, tmp, **copy)
        if then is not None:
            then(tmp)
        ctx.progress(1, 1, f"assembled {target.name}")  # where a cancel lands, before the output takes its name
    return staging_digest.finish(staging, target) if copy is None and then is None else None
