"""The fan-in's publish is a restartable step: the staging file survives it, a run after a death past the rename
finds its own output, a run after a death before the rename publishes again, and a superseded run touches no file."""

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
import rasterio

from schemas.tools.tiling import TileWindow
from workers.gdal.staging import PUBLISHED, assembly_target, create_staging, publish, write_window
from workers.jobkit.context import Fence, JobContext
from workers.jobkit.errors import JobFailed, JobSuperseded

SIDE = 256


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def staged(tmp_path: Path) -> tuple[Path, JobContext]:
    """A 2×1-tile staging file in a parts folder of workspace `tmp_path`, both windows written."""
    parts = tmp_path / ".geogate" / "tiles" / "c1"
    parts.mkdir(parents=True)
    profile = {"width": 2 * SIDE, "height": SIDE, "count": 1, "dtype": "uint16", "crs": "EPSG:32633"}
    profile |= {"transform": rasterio.transform.from_origin(500000, 4100000, 10, 10)}
    profile |= {"blockxsize": SIDE, "blockysize": SIDE}
    windows = [TileWindow(col_off=i * SIDE, row_off=0, width=SIDE, height=SIDE) for i in range(2)]
    staging = create_staging(parts, profile, windows)
    ctx = JobContext(call_id="c1", roots=[tmp_path])
    for index, window in enumerate(windows):
        data = np.full((1, SIDE, SIDE), index + 1, dtype="uint16")
        write_window(staging, data, window, index, ctx)
    return staging, ctx


def test_a_published_output_keeps_the_staging_file_whole_with_the_same_bytes(staged: tuple[Path, JobContext]) -> None:
    staging, ctx = staged
    before = sha256(staging)
    target = ctx.roots[0] / "out.tif"
    digest = publish(staging, target, ctx)
    assert digest == sha256(target) == sha256(staging) == before
    assert not list(ctx.roots[0].glob(".out.geogate.*"))


def test_a_fan_in_run_again_after_the_rename_takes_its_own_output_as_published(
    staged: tuple[Path, JobContext],
) -> None:
    staging, ctx = staged
    target = ctx.roots[0] / "out.tif"
    first = publish(staging, target, ctx, copy={"driver": "GTiff", "tiled": True, "compress": "deflate"})
    mtime = target.stat().st_mtime_ns
    again = assembly_target("out.tif", staging, ctx, overwrite=False)  # no `output.exists`: this call wrote it
    assert again == target
    assert publish(staging, target, ctx, copy={"driver": "GTiff", "compress": "deflate"}) == first == sha256(target)
    assert target.stat().st_mtime_ns == mtime


def test_another_file_at_the_target_is_still_in_the_way(staged: tuple[Path, JobContext]) -> None:
    staging, ctx = staged
    target = ctx.roots[0] / "out.tif"
    publish(staging, target, ctx)
    target.write_bytes(b"someone else's file")
    with pytest.raises(JobFailed) as caught:
        assembly_target("out.tif", staging, ctx, overwrite=False)
    assert caught.value.code == "output.exists"


def test_a_death_between_the_record_and_the_rename_publishes_again(staged: tuple[Path, JobContext]) -> None:
    staging, ctx = staged
    target = ctx.roots[0] / "out.tif"
    (staging.parent / PUBLISHED).write_text(f'{{"target": "{target}", "sha256": "{sha256(staging)}"}}')
    stale = ctx.roots[0] / ".out.geogate.dead.partial.tif"
    os.link(staging, stale)  # what the dead attempt left: a second name of the staging file
    assert assembly_target("out.tif", staging, ctx, overwrite=False) == target
    digest = publish(staging, target, ctx)
    assert digest == sha256(target) == sha256(staging)
    assert not stale.exists() and staging.exists()


def test_overviews_are_built_on_a_copy_so_a_run_again_starts_from_the_tiles_bytes(
    staged: tuple[Path, JobContext],
) -> None:
    staging, ctx = staged
    before = sha256(staging)

    def overviews(tmp: Path) -> None:
        with rasterio.open(tmp, "r+") as dst:
            dst.build_overviews([2])

    digest = publish(staging, ctx.roots[0] / "out.tif", ctx, then=overviews)
    assert sha256(staging) == before != digest
    with rasterio.open(ctx.roots[0] / "out.tif") as out:
        assert out.overviews(1) == [2]


def test_a_superseded_fan_in_touches_no_file_not_even_the_current_ones_temporary(
    staged: tuple[Path, JobContext],
) -> None:
    staging, ctx = staged
    current = ctx.roots[0] / ".out.geogate.current.partial.tif"
    current.write_bytes(b"the current attempt's output, being written")
    ctx.fence = Fence("c1", "stale", lambda: False)
    with pytest.raises(JobSuperseded):
        publish(staging, ctx.roots[0] / "out.tif", ctx)
    assert current.exists()
    assert not (ctx.roots[0] / "out.tif").exists()
