"""The floor under `raster_polygonize`'s polygon count (`workers.gdal.polygon_floor`) against GDAL's polygonizer
itself (`rasterio.features.shapes`) on seeded random bands: never above its count, equal where no polygon has a
hole, and the same whatever the strips."""

import numpy as np
import pytest
import rasterio.features

from workers.gdal import polygon_floor as floor_module
from workers.gdal.polygon_floor import polygon_floor


def gdal_count(data: np.ndarray, valid: np.ndarray, connectivity: int) -> int:
    return sum(1 for _ in rasterio.features.shapes(data, mask=valid, connectivity=connectivity))


@pytest.mark.parametrize("connectivity", [4, 8])
@pytest.mark.parametrize("seed", range(40))
def test_the_floor_is_never_above_gdals_polygon_count(seed: int, connectivity: int) -> None:
    rng = np.random.default_rng(seed)
    height, width = rng.integers(1, 40, 2)
    data = rng.integers(0, rng.integers(1, 5), (height, width)).astype("uint8")
    valid = rng.random((height, width)) >= rng.choice([0.0, 0.2, 0.5])

    assert polygon_floor(data, valid, connectivity) <= gdal_count(data, valid, connectivity)


def test_the_floor_is_the_count_when_no_polygon_has_a_hole() -> None:
    board = (np.indices((60, 60)).sum(axis=0) % 2).astype("uint8")  # 4-connected: every pixel its own polygon
    stripes = np.repeat(np.arange(30, dtype="float32")[:, None], 7, axis=1)
    everywhere = np.ones_like(board, dtype=bool)

    assert polygon_floor(board, everywhere, 4) == gdal_count(board, everywhere, 4) == 3600
    assert polygon_floor(stripes, np.ones_like(stripes, dtype=bool), 8) == 30


def test_the_floor_does_not_depend_on_the_strips(monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.random.default_rng(5).integers(0, 3, (37, 23)).astype("int32")
    valid = np.random.default_rng(6).random((37, 23)) > 0.1
    whole = polygon_floor(data, valid, 4)

    for rows in (1, 2, 5, 36):
        monkeypatch.setattr(floor_module, "STRIP_ROWS", rows)
        assert polygon_floor(data, valid, 4) == whole
