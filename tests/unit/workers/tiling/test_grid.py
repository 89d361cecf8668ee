"""The tile grid: square windows over a broad grid, strips of about a tile's area over a thin one, and the bound on
how many windows one call may have (`GEOGATE_LIMIT_TILES`)."""

from pathlib import Path

import pytest

from geogate.settings import LimitSettings, Settings
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tiling.grid import check_grid, count_windows, windows


def covered(width: int, height: int, side: int) -> int:
    grid, columns, rows = windows(width, height, side)
    assert len(grid) == columns * rows == count_windows(width, height, side)
    return sum(w.width * w.height for w in grid)


@pytest.mark.parametrize(("width", "height"), [(100_000_000, 1), (1, 100_000_000), (50_000, 300), (300, 50_000)])
def test_a_thin_grid_is_cut_into_strips_of_about_a_tile_not_slivers(width: int, height: int) -> None:
    grid, _, _ = windows(width, height, 2048)

    assert covered(width, height, 2048) == width * height
    assert all(w.width * w.height <= 2048 * 2048 for w in grid)
    assert all(w.col_off % 2048 == 0 and w.row_off % 2048 == 0 for w in grid)  # whole blocks, as tiles need
    assert len(grid) <= width * height // (2048 * 2048 // 2) + 1


def test_a_one_row_raster_of_a_hundred_million_pixels_is_24_windows_at_2048() -> None:
    assert count_windows(100_000_000, 1, 2048) == 24


def test_a_broad_grid_keeps_square_windows_with_ragged_edges() -> None:
    grid, columns, rows = windows(733, 601, 256)

    assert (columns, rows) == (3, 3)
    assert {(w.width, w.height) for w in grid} == {(256, 256), (221, 256), (256, 89), (221, 89)}


def test_a_grid_past_the_tile_bound_is_refused_on_the_named_argument(tmp_path: Path) -> None:
    limits = LimitSettings(tiles=8)
    ctx = JobContext("c", [tmp_path], settings=Settings(redis_url="redis://unused", limits=limits))

    check_grid(ctx, 512, 1024, 256, "uri")  # 8 windows
    with pytest.raises(JobFailed) as failed:
        check_grid(ctx, 768, 1024, 256, "uri")  # 12

    assert (failed.value.code, failed.value.field) == ("limit.tiles", "uri")
