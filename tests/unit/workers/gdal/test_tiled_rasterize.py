"""Tiled and whole `vector_rasterize` calls write the same pixels and profile: by pixel centre and `all_touched`, a
burn value and an attribute (later features over earlier ones), on a `like` grid in another CRS than the layer and
at a resolution over the layer (ragged edges either way), polygons, lines and points across the tile seams, some
on the seams. Through the real lifecycle on a fakeredis log, as `test_tiled.py` runs the other tiled tools.

The outputs are deflate-compressed, so the tiled one is GDAL's copy of the staging file: its blocks are the whole
output's, byte for byte, but GDAL's copy writes the GDAL_NODATA tag's value before the GeoTIFF keys in the header
where a created file has it after them, so the files differ in those header bytes only."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
import shapely
from pyproj import Transformer

from geogate.eventlog.store import EventStore
from tests.unit.workers.gdal.conftest import RasterFactory, VectorFactory
from tests.unit.workers.gdal.test_tiled import SIZE, both, digested, pixels, tile_types

LEFT, TOP, RES = 500_000.0, 5_540_000.0, 100.0
"""The EPSG:32633 grid of `make_raster`."""


def features(seed: int) -> list[shapely.Geometry]:
    """Large triangles, boxes (two with edges on the seams of tiles of 256), lines and points over a 733 × 601 pixel
    grid, overlapping one another; a collection first, so the layer takes any geometry type."""
    rng = np.random.default_rng(seed)
    width, height = SIZE[1] * RES, SIZE[0] * RES

    def xy(n: int) -> np.ndarray:
        return np.column_stack([LEFT + rng.uniform(-0.02, 1.02, n) * width, TOP - rng.uniform(-0.02, 1.02, n) * height])

    seam_x, seam_y = LEFT + 256 * RES, TOP - 256 * RES
    geoms: list[shapely.Geometry] = [shapely.GeometryCollection([shapely.Point(*xy(1)[0]), shapely.LineString(xy(2))])]
    geoms += [shapely.Polygon(xy(3)) for _ in range(25)]
    geoms += [shapely.box(*corner, *(corner + rng.uniform(50, 4000, 2))) for corner in xy(30)]
    geoms += [shapely.box(seam_x - 700, seam_y - 900, seam_x, seam_y), shapely.box(seam_x, seam_y, seam_x + 300, TOP)]
    geoms += [shapely.LineString(xy(int(rng.integers(2, 6)))) for _ in range(15)]
    geoms += [shapely.Point(*point) for point in xy(20)]
    return geoms


def same_burn(whole: dict, tiled: dict) -> None:
    (a, meta_a), (b, meta_b) = pixels(whole["output"]["path"]), pixels(tiled["output"]["path"])
    assert meta_a == meta_b and np.array_equal(a, b)
    with rasterio.open(whole["output"]["path"]) as one, rasterio.open(tiled["output"]["path"]) as other:
        assert one.profile == other.profile
    assert {k: v for k, v in whole.items() if k != "output"} == {k: v for k, v in tiled.items() if k != "output"}
    assert digested(whole) and digested(tiled)


@pytest.mark.parametrize("all_touched", [False, True])
@pytest.mark.parametrize("burn", [{"attribute": "id", "dtype": "int16", "nodata": -1}, {"burn_value": 7.5}])
def test_a_tiled_burn_on_a_like_grid_in_another_crs_has_the_whole_ones_pixels(
    fake_store: EventStore,
    tmp_path: Path,
    make_raster: RasterFactory,
    make_vector: VectorFactory,
    all_touched: bool,
    burn: dict,
) -> None:
    make_raster("like.tif", size=SIZE, crs="EPSG:32633")
    to_degrees = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
    make_vector(
        "f.gpkg", [shapely.transform(g, lambda c: np.column_stack(to_degrees.transform(*c.T))) for g in features(3)]
    )
    args = {"uri": "f.gpkg", "like": "like.tif", "all_touched": all_touched, "output": "out.tif", **burn}

    whole, tiled, call_id = both(fake_store, tmp_path, "vector_rasterize", **args)

    same_burn(whole, tiled)
    assert (tiled["width"], tiled["height"]) == (SIZE[1], SIZE[0]) and tiled["feature_count"] == 93
    assert 0 < tiled["burned_pixels"] < SIZE[0] * SIZE[1]
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
    assert not (tmp_path / ".geogate").exists()


@pytest.mark.parametrize("all_touched", [False, True])
def test_a_tiled_burn_at_a_resolution_over_the_layer_has_the_whole_ones_pixels(
    fake_store: EventStore, tmp_path: Path, make_vector: VectorFactory, all_touched: bool
) -> None:
    make_vector("f.gpkg", features(8), crs="EPSG:32633")
    args = {"uri": "f.gpkg", "attribute": "id", "resolution": [97.0, 103.0], "dtype": "float32", "nodata": -9}

    whole, tiled, call_id = both(
        fake_store, tmp_path, "vector_rasterize", **args, all_touched=all_touched, output="o.tif"
    )

    same_burn(whole, tiled)
    assert tiled["width"] % 256 and tiled["height"] % 256 and tiled["width"] * tiled["height"] > 4 * 256 * 256
    assert "tool.fanned_out" in tile_types(fake_store, call_id)
