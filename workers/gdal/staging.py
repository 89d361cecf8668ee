"""The staging file of a tiled raster call: one uncompressed, tiled GeoTIFF in the call's parts folder that every
tile writes its own window of, in place, and that becomes the output by a link and a rename (or a copy, for
compressed or COG outputs, or outputs with overviews).

Writing in place instead of one part file per tile and a mosaic: the assembly of a 6598×9523 float32 output took
0.97 s as parts copied into a new file against none for a rename (measured on the 2-core dev machine), which is
most of what two workers save on such a warp. GDAL creates an uncompressed tiled GeoTIFF with every block
allocated, so a window that covers whole blocks is rewritten at the offsets it already has, and several processes
can write disjoint windows at once.
"""

import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import rasterio.shutil
from pydantic import JsonValue
from rasterio.windows import Window

from schemas.tools.tiling import TileResult, TileWindow
from workers.gdal import staging_digest, staging_parts
from workers.gdal.errors import writing
from workers.gdal.outputs import file_ref
from workers.jobkit import objects
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output, output_path
from workers.run.faults import pause_point
from workers.tiling import part_objects

STAGING = "staging.tif"
PUBLISHED = "published.json"
"""In the parts folder: the output the fan-in is publishing, and its sha256."""


def staging_profile(profile: dict[str, Any]) -> dict[str, Any]:
    """`profile` as an uncompressed tiled GeoTIFF (what tiles can write in place)."""
    kept = {k: v for k, v in profile.items() if k not in {"compress", "streamable_output", "opener", "predictor"}}
    return kept | {"driver": "GTiff", "tiled": True}


def stage(
    folder: Path, profile: dict[str, Any], windows: list[TileWindow], tags: dict[str, str] | None = None
) -> dict[str, JsonValue]:
    """The plan's entries for the staging file of tiles `windows` in parts folder `folder`: in a folder root the
    file itself (`create_staging`); in an object root its `s3://` name and layout, the parts being objects
    (`workers.gdal.staging_parts`).

    Raises:
        ValidationError: in an object root, a profile with no JSON form (the call then runs whole).
    """
    uri = part_objects.folder_uri(folder)
    if uri is None:
        return {"staging": str(create_staging(folder, profile, windows, tags))}
    return {"staging": f"{uri}/{STAGING}", "layout": staging_parts.layout_of(staging_profile(profile), tags)}


def staged(plan: dict[str, JsonValue], tiles: list[TileResult]) -> Path:
    """The staging file the fan-in publishes: a folder root's as the tiles wrote it; in an object root, made in the
    fan-in's own scratch from the tiles' parts as the planner of a folder root would have made it.

    Raises:
        JobFailed: `tiles.missing`, `tiles.invalid_part`, `storage.failed`, `gdal.write_failed`.
    """
    name = str(plan["staging"])
    if not part_objects.is_object(name):
        return Path(name)
    layout = staging_parts.Layout.model_validate(plan["layout"])
    windows = [tile.window for tile in sorted(tiles, key=lambda t: t.index)]
    made = create_staging(staging_parts.local_folder(name), staging_parts.profile_of(layout), windows, layout.tags)
    staging_parts.fill(made, name, layout, tiles)
    return made


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


def write_window(name: str | Path, data: np.ndarray, window: TileWindow, index: int, ctx: JobContext) -> None:
    """Write tile `index`'s pixels into the staging file `name` names, in place, only while this tile's attempt is
    current; then take the file's digest on as far as its bytes are final (`workers.gdal.staging_digest`). In an
    object root, put them whole as the tile's part instead."""
    if ctx.fence is not None:
        ctx.fence.check()
    if part_objects.is_object(str(name)):
        part_objects.put_array(staging_parts.part_uri(str(name), index), data)
        return
    staging = Path(name)
    target = Window(window.col_off, window.row_off, window.width, window.height)
    with writing(), rasterio.open(pinned(staging, "output"), "r+") as dst:
        dst.write(data, window=target)
    staging_digest.follow(staging, index)


def assembly_target(uri: str, staging: Path, ctx: JobContext, *, overwrite: bool) -> Path:
    """Where the fan-in publishes call's output `uri`: `workers.jobkit.files.output_path`, except that an output this
    call already published (a fan-in that died after the rename, before its outcome landed) is its own, not in the way.

    Raises:
        JobFailed: as `output_path`.
    """
    try:
        return output_path(uri, ctx.roots, overwrite=overwrite)
    except JobFailed as exc:
        if exc.code != "output.exists":
            raise
        target = output_path(uri, ctx.roots, overwrite=True)
        if _published(staging, target) is None:
            raise
        return target


def publish(
    staging: Path,
    target: Path,
    ctx: JobContext,
    *,
    copy: dict[str, Any] | None = None,
    then: Callable[[Path], None] | None = None,
) -> str:
    """The staging file becomes `target`, and its sha256 is returned: linked as it is, or (`copy`: GDAL creation
    options, with `driver`) copied into the requested format, and `then` given the file (its own copy of the
    staging file) before it takes the target's name. Only while the fan-in is the call's current attempt.

    A restartable step: the staging file is never moved or changed, so it stays whole until the parts folder is
    removed after the outcome; just before the rename the output's digest is recorded in the parts folder, so a
    fan-in that runs again after a death past the rename finds `target` published (the same digest) and returns it.

    Raises:
        JobFailed: `gdal.write_failed`; JobSuperseded: a re-dispatch made another fan-in current; JobCancelled: the
            call was cancelled (nothing is left at `target`).
    """
    done = _published(staging, target)
    if done is not None:
        return done
    pause_point(ctx, "fan_in.publish")
    with atomic_output(Path(pinned(target, "output")), ctx.fence) as tmp:
        if copy is None and then is None:
            _link(staging, tmp)  # the same bytes under a second name: the digest that followed the tiles holds
            sha256 = staging_digest.finish(staging, tmp) or file_ref(tmp, "GTiff").sha256
        else:
            if copy is None:
                shutil.copyfile(staging, tmp)
            else:
                with writing():
                    rasterio.shutil.copy(staging, tmp, **copy)
            pause_point(ctx, "fan_in.copied")
            if then is not None:
                then(tmp)
            sha256 = file_ref(tmp, "GTiff").sha256
        ctx.progress(1, 1, f"assembled {target.name}")  # where a cancel lands, before the output takes its name
        _record(staging, target, sha256)
        pause_point(ctx, "fan_in.before_rename")
    pause_point(ctx, "fan_in.after_rename")
    return sha256


def _link(staging: Path, tmp: Path) -> None:
    try:
        os.link(staging, tmp)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copyfile(staging, tmp)  # the parts folder is on another filesystem than the output (a bind mount)


def _record(staging: Path, target: Path, sha256: str) -> None:
    """Write down, in the parts folder, that `target` is about to be published with `sha256` (written aside, then
    renamed: whole or absent); in an object root, put beside the parts as well (the fan-in's folder is its own)."""
    record = staging.parent / PUBLISHED
    aside = record.with_name(f".{PUBLISHED}.{os.getpid()}")
    aside.write_text(json.dumps({"target": objects.shown(target), "sha256": sha256}))
    aside.replace(record)
    uri = part_objects.folder_uri(record)
    if uri is not None:
        part_objects.put_bytes(uri, record.read_bytes())


def _published(staging: Path, target: Path) -> str | None:
    """The digest of `target` when this call's fan-in published it already (its record names it, and the file or
    object at `target` has the recorded digest); else None."""
    try:
        record = json.loads(_record_text(staging.parent / PUBLISHED) or "")
    except (OSError, ValueError):
        return None
    if record.get("target") != objects.shown(target):
        return None
    sha256 = _digest_of(target)
    return sha256 if sha256 is not None and sha256 == record.get("sha256") else None


def _record_text(record: Path) -> str | None:
    if record.is_file():
        return record.read_text()
    uri = part_objects.folder_uri(record)
    body = part_objects.get_bytes(uri) if uri is not None else None
    return None if body is None else body.decode()


def _digest_of(target: Path) -> str | None:
    """The sha256 of file `target`; of an object, the one it was published with."""
    if target.is_file():
        return file_ref(target, "GTiff").sha256
    mount = objects.mount_of(target)
    head = mount.head(mount.key(target)) if mount is not None else None
    return None if head is None else head.get("Metadata", {}).get("sha256")
