"""The staging file's sha256 taken as its tiles write their windows (`workers.gdal.staging_digest`)."""

import hashlib
import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from rasterio.windows import Window

from schemas.tools.tiling import TileWindow
from workers.gdal import staging_digest
from workers.gdal.staging import create_staging, write_window
from workers.jobkit.context import JobContext
from workers.tiling.grid import windows

WIDTH, HEIGHT, SIDE = 700, 600, 256
"""3×3 tiles of 256 with ragged edges."""


def profile(count: int = 2, interleave: str = "pixel") -> dict:
    return {
        "driver": "GTiff", "width": WIDTH, "height": HEIGHT, "count": count, "dtype": "float32", "crs": "EPSG:3857",
        "transform": Affine(10, 0, 0, 0, -10, 0), "nodata": -9999.0, "blockxsize": 256, "blockysize": 256,
        "interleave": interleave,
    }  # fmt: skip


def tile_data(window: TileWindow, index: int, count: int = 2) -> np.ndarray:
    return np.random.default_rng(index).random((count, window.height, window.width), dtype=np.float32)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def grid() -> list[TileWindow]:
    return windows(WIDTH, HEIGHT, SIDE)[0]


def test_a_saved_running_state_taken_up_by_another_hasher_gives_hashlibs_digest() -> None:
    data = np.random.default_rng(1).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    cuts = sorted(random.Random(2).sample(range(1, len(data)), 7))
    state = staging_digest.Sha256().state
    for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True):
        hasher = staging_digest.Sha256(state)
        chunk = np.frombuffer(data, dtype=np.uint8)[start:end]
        hasher.update_at(chunk.ctypes.data, end - start)
        state = hasher.state
    assert staging_digest.Sha256(state).hexdigest() == hashlib.sha256(data).hexdigest()
    assert staging_digest.Sha256().hexdigest() == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("interleave", ["pixel", "band"])
def test_a_window_written_in_place_changes_only_its_own_blocks(tmp_path: Path, interleave: str) -> None:
    """What the digest relies on: outside the window's blocks, the staging file's bytes are those GDAL created."""
    staging = create_staging(tmp_path, profile(interleave=interleave), windows(WIDTH, HEIGHT, SIDE)[0])
    before = staging.read_bytes()
    with rasterio.open(staging, "r+") as dst:
        dst.write(np.full((2, 256, 256), 7, "float32"), window=Window(256, 256, 256, 256))
        tag = lambda name, band: int(dst.get_tag_item(f"{name}_1_1", "TIFF", bidx=band))  # noqa: E731
        spans = [(tag("BLOCK_OFFSET", band), tag("BLOCK_SIZE", band)) for band in (1, 2)]
    after = staging.read_bytes()
    changed = np.flatnonzero(np.frombuffer(before, np.uint8) != np.frombuffer(after, np.uint8))
    assert len(before) == len(after) and changed.size > 0
    assert all(any(start <= i < start + size for start, size in spans) for i in changed.tolist())


def test_tiles_written_row_by_row_leave_the_fan_in_only_the_last_row_to_hash(
    tmp_path: Path, grid: list[TileWindow]
) -> None:
    staging = create_staging(tmp_path, profile(), grid)
    starts = json.loads((tmp_path / staging_digest.LAYOUT).read_text())["starts"]
    ctx = JobContext(call_id="c", roots=[tmp_path])
    for index in range(6):  # the first two rows of tiles
        write_window(staging, tile_data(grid[index], index), grid[index], index, ctx)
    offset, _ = staging_digest._checkpoint(tmp_path)
    assert offset == starts[6]  # the file is final up to the first block of row 3

    for index in range(6, 9):
        write_window(staging, tile_data(grid[index], index), grid[index], index, ctx)
    assert staging_digest._checkpoint(tmp_path)[0] == staging.stat().st_size  # the last tile hashed the rest
    output = tmp_path / "out.tif"
    os.rename(staging, output)
    assert staging_digest.finish(staging, output) == sha256_of(output)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_tiles_written_in_any_order_give_the_files_digest(tmp_path: Path, grid: list[TileWindow], seed: int) -> None:
    staging = create_staging(tmp_path, profile(count=1), grid)
    ctx = JobContext(call_id="c", roots=[tmp_path])
    order = random.Random(seed).sample(range(len(grid)), len(grid))
    for index in order:
        write_window(staging, tile_data(grid[index], index, 1), grid[index], index, ctx)
        assert staging_digest._checkpoint(tmp_path)[0] <= staging.stat().st_size
    output = tmp_path / "out.tif"
    os.rename(staging, output)
    assert staging_digest.finish(staging, output) == sha256_of(output)


def test_a_lost_checkpoint_or_layout_costs_a_full_read_not_a_wrong_digest(
    tmp_path: Path, grid: list[TileWindow]
) -> None:
    staging = create_staging(tmp_path, profile(), grid)
    ctx = JobContext(call_id="c", roots=[tmp_path])
    for index in range(len(grid)):
        write_window(staging, tile_data(grid[index], index), grid[index], index, ctx)
    output = tmp_path / "out.tif"
    shutil.copy(staging, output)
    (tmp_path / staging_digest.CHECKPOINT).unlink()
    assert staging_digest.finish(staging, output) == sha256_of(output)
    (tmp_path / staging_digest.LAYOUT).unlink()
    assert staging_digest.finish(staging, output) == sha256_of(output)


def test_an_output_changed_after_the_tiles_is_hashed_whole(tmp_path: Path, grid: list[TileWindow]) -> None:
    """A checkpoint belongs to a file of the layout's size; any other file is read from its first byte."""
    staging = create_staging(tmp_path, profile(), grid)
    ctx = JobContext(call_id="c", roots=[tmp_path])
    for index in range(len(grid)):
        write_window(staging, tile_data(grid[index], index), grid[index], index, ctx)
    output = tmp_path / "out.tif"
    output.write_bytes(staging.read_bytes() + b"overviews")
    assert staging_digest.finish(staging, output) == sha256_of(output)


def test_a_window_written_twice_voids_the_checkpoints(tmp_path: Path, grid: list[TileWindow]) -> None:
    """A re-dispatched tile writes its window again: were its bytes to differ (its source changed in between), what
    was hashed of the first write would not be the file; the fan-in then reads the whole file."""
    staging = create_staging(tmp_path, profile(), grid)
    ctx = JobContext(call_id="c", roots=[tmp_path])
    for index in range(len(grid)):
        write_window(staging, tile_data(grid[index], index), grid[index], index, ctx)
    assert staging_digest._checkpoint(tmp_path)[0] == staging.stat().st_size
    write_window(staging, tile_data(grid[0], 99), grid[0], 0, ctx)  # tile 0 again, other bytes
    output = tmp_path / "out.tif"
    os.rename(staging, output)
    assert staging_digest.finish(staging, output) == sha256_of(output)


def test_a_tile_whose_parts_folder_was_removed_still_ends(tmp_path: Path, grid: list[TileWindow]) -> None:
    """A cancel removes the parts folder while tiles run: following the digest fails quietly, never the tile."""
    (tmp_path / "parts").mkdir()
    staging = create_staging(tmp_path / "parts", profile(), grid)
    shutil.rmtree(tmp_path / "parts")
    staging_digest.follow(staging, 0)
    assert not (tmp_path / "parts").exists()
