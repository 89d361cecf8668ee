"""Job `vector_rasterize` burns window by window: each window with the features whose bounding box comes within a
pixel of it, in the layer's order. Burnt by windows of 256 over grids that are not multiples of it, the output
has the pixels one rasterize of the whole grid gives (rasterio.features.rasterize, GDAL's rasterizer), by pixel
centre and `all_touched`, a burn value and an attribute, on a `like` grid in another CRS than the layer and at a
resolution over the layer, with polygons, lines and points across the windows' seams and on them."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
import rasterio.features
import shapely
from pyproj import Transformer

from geogate.settings import Settings
from schemas.tools.analysis import VectorRasterizeArgs
from tests.unit.workers.gdal.conftest import RasterFactory, VectorFactory
from workers.jobkit.context import JobContext
from workers.tools.analysis import vector_rasterize

SIZE = (601, 733)
"""Rows, columns: 3×3 windows of 256 with ragged edges."""
LEFT, TOP, RES = 500_000.0, 5_540_000.0, 100.0
"""The EPSG:32633 grid of `make_raster`."""


def features(seed: int) -> list[shapely.Geometry]:
    """Large triangles, boxes (two with edges on the seams of windows of 256), lines and points over a 733 × 601
    pixel grid, overlapping one another; a collection first, so the layer takes any geometry type."""
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


def by_windows(root: Path) -> JobContext:
    return JobContext(
        call_id="c", roots=[root], settings=Settings(redis_url="redis://unused", workspaces=str(root), tile_size=256)
    )


def at_once(
    geoms: list[shapely.Geometry], values: np.ndarray, out: rasterio.DatasetReader, all_touched: bool
) -> np.ndarray:
    return rasterio.features.rasterize(
        zip(geoms, values, strict=True), out_shape=out.shape, transform=out.transform, fill=out.nodata,
        all_touched=all_touched, dtype=out.dtypes[0],
    )  # fmt: skip


@pytest.mark.parametrize("all_touched", [False, True])
@pytest.mark.parametrize("burn", [{"attribute": "id", "dtype": "int16", "nodata": -1}, {"burn_value": 7.5}])
def test_burning_by_windows_on_a_like_grid_gives_the_pixels_of_one_burn(
    tmp_path: Path, make_raster: RasterFactory, make_vector: VectorFactory, all_touched: bool, burn: dict
) -> None:
    make_raster("like.tif", size=SIZE, crs="EPSG:32633")
    geoms = features(3)
    to_degrees = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
    to_metres = Transformer.from_crs("EPSG:4326", "EPSG:32633", always_xy=True)
    degrees = [shapely.transform(g, lambda c: np.column_stack(to_degrees.transform(*c.T))) for g in geoms]
    make_vector("f.gpkg", degrees)
    args = VectorRasterizeArgs(uri="f.gpkg", like="like.tif", all_touched=all_touched, output="out.tif", **burn)

    result = vector_rasterize(args, by_windows(tmp_path))

    back = [shapely.transform(g, lambda c: np.column_stack(to_metres.transform(*c.T))) for g in degrees]
    values = np.arange(len(geoms)) if "attribute" in burn else np.full(len(geoms), burn["burn_value"])
    with rasterio.open(tmp_path / "out.tif") as out:
        want, got = at_once(back, values, out, all_touched), out.read(1)
    assert np.array_equal(got, want)
    assert result.burned_pixels == np.count_nonzero(want != args.nodata) and result.feature_count == len(geoms)


@pytest.mark.parametrize("all_touched", [False, True])
def test_burning_by_windows_at_a_resolution_gives_the_pixels_of_one_burn(
    tmp_path: Path, make_vector: VectorFactory, all_touched: bool
) -> None:
    geoms = features(8)
    make_vector("f.gpkg", geoms, crs="EPSG:32633")
    args = VectorRasterizeArgs(
        uri="f.gpkg", attribute="id", resolution=[97.0, 103.0], dtype="float32", nodata=-9, all_touched=all_touched,
        output="o.tif",
    )  # fmt: skip

    result = vector_rasterize(args, by_windows(tmp_path))

    with rasterio.open(tmp_path / "o.tif") as out:
        want, got = at_once(geoms, np.arange(len(geoms)), out, all_touched), out.read(1)
    assert result.width % 256 and result.height % 256 and result.width * result.height > 4 * 256 * 256
    assert np.array_equal(got, want)
