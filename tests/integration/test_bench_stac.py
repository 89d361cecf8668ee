"""The STAC composites bench (`bench/stac.py`): its area crosses the three tiles of every layout, its comparison finds
a pixel that differs, and a small run through the stack and odc-stac gives the same composite both ways."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import rasterio
import shapely
from affine import Affine
from rasterio.warp import transform_bounds

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import stac  # noqa: E402

from tests.stac.scenes import CRS, ORIGINS, Layout  # noqa: E402

pytestmark = pytest.mark.integration

SMALL = Layout(size=512, pixel=10.0, block=256, overviews=1)


@pytest.mark.parametrize("layout", [Layout(), SMALL, Layout(size=2048, pixel=10.0, block=1024, overviews=3)])
def test_the_area_crosses_the_three_tiles_of_every_layout(layout: Layout) -> None:
    side = layout.size * layout.pixel
    tiles = [shapely.box(x, y - side, x + side, y) for x, y in layout.origins]
    area = shapely.box(*transform_bounds("EPSG:4326", CRS, *stac.area_of(layout)))
    assert all(area.intersection(tile).area > 0.1 * area.area for tile in tiles)
    assert not area.within(shapely.union_all(tiles[:2])) and not area.within(shapely.union_all(tiles[1:]))


def test_the_default_layout_is_the_tests() -> None:
    assert Layout().origins == ORIGINS
    assert SMALL.origins == ((600_000.0, 5_160_000.0), (604_000.0, 5_160_000.0), (602_000.0, 5_157_000.0))


def test_the_comparison_finds_a_value_that_differs_and_one_missing(tmp_path: Path) -> None:
    values = np.arange(2 * 8 * 8, dtype="float32").reshape(2, 8, 8)
    profile = {"driver": "GTiff", "width": 8, "height": 8, "count": 2, "dtype": "float32", "crs": CRS}
    profile |= {"transform": Affine(10, 0, 600_000, 0, -10, 5_160_000), "nodata": float("nan")}
    other = values.copy()
    other[1, 2, 3] += 0.5
    other[0, 6, 5] = np.nan
    for name, data in (("a.tif", values), ("b.tif", other), ("c.tif", values)):
        with rasterio.open(tmp_path / name, "w", **profile) as dst:
            dst.write(data)

    text, agrees = stac.compare(tmp_path / "a.tif", tmp_path / "b.tif")
    assert not agrees
    assert text == (
        "largest difference 0.5; 2 of 128 values differ (1 with a value on one side only), "
        "within rows 2-6, columns 3-5 of the grid"
    )
    assert stac.compare(tmp_path / "a.tif", tmp_path / "c.tif")[1]


SMALL_RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
import stac
from tests.stac.scenes import Layout
got = stac.measure_all(runs=1, layout=Layout(size=512, pixel=10.0, block=256, overviews=1), tile_size=256, chunk=256)
sides = ("geogate", "odc-stac")
print(json.dumps({"agrees": got.agrees, "agreement": got.agreement, "runs": [len(got.ms[s]) for s in sides],
                  "read": all(got.bytes[s][0] > 0 and got.ranges[s][0] > 0 for s in sides), "grid": got.grid,
                  "tiles": [None if c is None else len(c.tiles_s) for c in got.calls]}))
"""
"""The bench's run in a process of its own, as a user runs it: this one imported `workers`, which points GDAL's HTTP at
a closed proxy for the whole process (`workers.gdal.remote_guard`), where odc-stac reads."""


@pytest.mark.timeout(600)
def test_a_small_run_through_the_stack_agrees_with_odc_stac() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GDAL_HTTP_PROXY", "GDAL_HTTPS_PROXY")}
    done = subprocess.run(
        [sys.executable, "-c", SMALL_RUN, str(ROOT / "bench")], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["agrees"], got["agreement"]
    assert got["agreement"].startswith("largest difference 0;")
    assert got["runs"] == [1, 1] and got["read"]
    assert got["grid"] == "415 × 414 pixels of 10 m, EPSG:32633"
    assert got["tiles"] == [4]  # 2 × 2 tiles of 256
