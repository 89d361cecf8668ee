"""Jobs `raster_polygonize`, `vector_rasterize`, `raster_contours`: areas, pixel counts and line positions
checked with shapely and numpy on the same data."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio
import pyogrio.raw
import pytest
import rasterio
import shapely
from affine import Affine
from pydantic import ValidationError

from schemas.tools.analysis import RasterContoursArgs, RasterPolygonizeArgs, VectorRasterizeArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.analysis import raster_contours, raster_polygonize, vector_rasterize

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]
CancelledAtLastReport = Callable[[Callable[[str, JobContext], object]], None]
RES = 0.01  # EPSG:4326 grid of conftest.GRIDS: origin (10, 50)


def read(path: Path) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    _, _, wkb, columns = pyogrio.raw.read(path)
    return shapely.from_wkb(wkb), columns, list(pyogrio.read_info(path)["fields"])


def pixel_boxes(transform: Affine, shape: tuple[int, int]) -> np.ndarray:
    rows, cols = np.mgrid[0 : shape[0], 0 : shape[1]]
    left, top = transform * (cols, rows)
    right, bottom = transform * (cols + 1, rows + 1)
    return shapely.box(left, bottom, right, top)


# --- raster_polygonize ------------------------------------------------------------------------------------------


def test_polygons_cover_each_value_s_pixels_and_skip_nodata(
    make_raster: RasterFactory, ctx: JobContext, tmp_path: Path
) -> None:
    rng = np.random.default_rng(11)
    classes = rng.integers(1, 5, (23, 37)).astype("int16")
    classes[4:9, 6:15] = -1  # nodata
    make_raster(data=classes, dtype="int16", nodata=-1, crs="EPSG:4326")

    result = raster_polygonize(RasterPolygonizeArgs(uri="src.tif", output="classes.gpkg", field_name="cls"), ctx)

    geoms, columns, fields = read(tmp_path / "classes.gpkg")
    assert fields == ["cls"] and result.feature_count == len(geoms) and result.distinct_values == 4
    for value in range(1, 5):
        area = shapely.area(geoms[columns[0] == value]).sum()
        assert area == pytest.approx(np.count_nonzero(classes == value) * RES * RES, rel=1e-9)
    nodata_box = shapely.box(10.06 + 1e-6, 49.91 + 1e-6, 10.15 - 1e-6, 49.96 - 1e-6)
    assert not shapely.intersects(geoms, nodata_box).any()
    assert shapely.union_all(geoms).area == pytest.approx(np.count_nonzero(classes != -1) * RES * RES, rel=1e-9)


@pytest.mark.parametrize(("connectivity", "pieces"), [(4, 3), (8, 1)])
def test_connectivity_decides_whether_diagonal_pixels_join(
    make_raster: RasterFactory, ctx: JobContext, tmp_path: Path, connectivity: int, pieces: int
) -> None:
    grid = np.zeros((5, 5), dtype="uint8")
    grid[1, 1] = grid[2, 2] = grid[3, 3] = 7  # a diagonal: three pieces across edges, one across corners
    make_raster(data=grid, dtype="uint8", nodata=0)

    raster_polygonize(RasterPolygonizeArgs(uri="src.tif", output="d.gpkg", connectivity=connectivity), ctx)

    geoms, columns, _ = read(tmp_path / "d.gpkg")
    assert (len(geoms), set(columns[0].tolist())) == (pieces, {7})


# --- vector_rasterize -------------------------------------------------------------------------------------------


def test_burns_an_attribute_by_pixel_centre_on_a_like_grid(
    make_raster: RasterFactory, make_vector: VectorFactory, ctx: JobContext, tmp_path: Path
) -> None:
    like = make_raster("like.tif", size=(31, 47), crs="EPSG:4326")
    zones = [shapely.box(10.013, 49.813, 10.137, 49.9), shapely.Polygon([(10.2, 49.72), (10.44, 49.75), (10.3, 49.95)])]
    make_vector("zones.gpkg", zones)

    result = vector_rasterize(
        VectorRasterizeArgs(
            uri="zones.gpkg", output="burnt.tif", attribute="id", like="like.tif", nodata=-1, dtype="int16"
        ),
        ctx,
    )

    with rasterio.open(like) as grid, rasterio.open(tmp_path / "burnt.tif") as out:
        assert (out.transform, out.crs, out.shape, out.nodata) == (grid.transform, grid.crs, grid.shape, -1)
        burnt, transform = out.read(1), out.transform
    rows, cols = np.mgrid[0:31, 0:47]
    x, y = transform * (cols + 0.5, rows + 0.5)
    want = np.full((31, 47), -1)
    for i, zone in enumerate(zones):
        want[shapely.contains_xy(zone, x, y)] = i
    assert np.array_equal(burnt, want)
    assert result.burned_pixels == np.count_nonzero(want != -1)


def test_a_rasterize_cancelled_with_its_last_report_leaves_no_file(
    make_raster: RasterFactory, make_vector: VectorFactory, cancelled_at_last_report: CancelledAtLastReport
) -> None:
    make_raster("like.tif", size=(31, 47), crs="EPSG:4326")
    make_vector("zones.gpkg", [shapely.box(10.013, 49.813, 10.137, 49.9)])

    def run(output: str, ctx: JobContext) -> object:
        args = VectorRasterizeArgs(uri="zones.gpkg", output=output, like="like.tif", burn_value=1)
        return vector_rasterize(args, ctx)

    cancelled_at_last_report(run)


def test_all_touched_burns_every_pixel_a_polygon_overlaps_at_a_resolution(
    make_vector: VectorFactory, ctx: JobContext, tmp_path: Path
) -> None:
    zone = shapely.Polygon([(500_013, 5_000_007), (500_391, 5_000_052), (500_170, 5_000_333)])
    make_vector("tri.gpkg", [zone], crs="EPSG:32633")

    result = vector_rasterize(
        VectorRasterizeArgs(
            uri="tri.gpkg", output="t.tif", burn_value=5, resolution=[20, 20], all_touched=True, dtype="uint8"
        ),
        ctx,
    )

    with rasterio.open(tmp_path / "t.tif") as out:
        burnt, transform = out.read(1), out.transform
        assert out.crs.to_epsg() == 32633
    assert (result.width, result.height) == (int(np.ceil(378 / 20)), int(np.ceil(326 / 20)))
    overlap = shapely.area(shapely.intersection(pixel_boxes(transform, burnt.shape), zone)) > 1e-6
    assert np.array_equal(burnt == 5, overlap)


def test_rasterize_errors_name_the_field(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("zones.gpkg")
    with pytest.raises(JobFailed) as text_attribute:
        vector_rasterize(
            VectorRasterizeArgs(uri="zones.gpkg", output="o.tif", attribute="name", resolution=[0.01, 0.01]), ctx
        )
    with pytest.raises(ValidationError) as both:
        VectorRasterizeArgs(uri="zones.gpkg", output="o.tif", burn_value=1, attribute="id", resolution=[1, 1])
    assert text_attribute.value.field == "attribute"
    assert "exactly one of burn_value or attribute" in str(both.value)


# --- raster_contours --------------------------------------------------------------------------------------------


def test_contours_of_a_plane_are_straight_lines_at_their_level_and_avoid_nodata(
    make_raster: RasterFactory, ctx: JobContext, tmp_path: Path
) -> None:
    """z rises 1 per pixel eastwards: level L lies on the vertical line through x where the centres' z is L."""
    rows, cols = 29, 41
    z = np.tile(np.arange(cols, dtype="float32") * 1.0 + 100, (rows, 1))
    z[10:15, 20:26] = -9999
    make_raster(data=z, nodata=-9999, crs="EPSG:4326")

    result = raster_contours(RasterContoursArgs(uri="src.tif", output="c.gpkg", interval=5, base=2), ctx)

    want_levels = [v for v in range(102, 141, 5)]
    assert result.levels == want_levels
    geoms, columns, fields = read(tmp_path / "c.gpkg")
    assert fields == ["level"] and set(columns[0].tolist()) == set(want_levels)
    for geom, level in zip(geoms, columns[0], strict=True):
        x = 10.0 + (level - 100 + 0.5) * RES  # the column whose centre has z == level
        coords = shapely.get_coordinates(geom)
        assert np.allclose(coords[:, 0], x, atol=1e-9)
    for level in want_levels:  # the full height between the first and last row centres, less the nodata gap
        length = shapely.length(geoms[columns[0] == level]).sum()
        crosses_hole = 19 < level - 100 < 26  # the lines between the centres of columns 19 and 26
        if not crosses_hole:
            assert length == pytest.approx((rows - 1) * RES, rel=1e-9)
    hole = shapely.box(10.0 + 20.5 * RES, 50 - 14.5 * RES, 10.0 + 24.5 * RES, 50 - 10.5 * RES)
    assert not shapely.intersects(geoms, hole).any()


def test_contours_at_given_levels_of_a_cone_are_circles(
    make_raster: RasterFactory, ctx: JobContext, tmp_path: Path
) -> None:
    n = 81
    rows, cols = np.mgrid[0:n, 0:n]
    z = np.hypot(rows - 40, cols - 40).astype("float32")  # distance in pixels from the centre pixel
    make_raster(data=z, crs="EPSG:32633")  # 100 m pixels

    raster_contours(RasterContoursArgs(uri="src.tif", output="c.gpkg", levels=[10, 25]), ctx)

    geoms, columns, _ = read(tmp_path / "c.gpkg")
    centre = (500_000 + 40.5 * 100, 5_540_000 - 40.5 * 100)
    for geom, level in zip(geoms, columns[0], strict=True):
        coords = shapely.get_coordinates(geom)
        radius = np.hypot(coords[:, 0] - centre[0], coords[:, 1] - centre[1]) / 100
        assert np.abs(radius - level).max() < 0.05  # linear interpolation along cell edges of a cone
        assert shapely.length(geom) / 100 == pytest.approx(2 * np.pi * level, rel=0.01)


def test_too_many_levels_is_an_error_naming_interval(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster()
    with pytest.raises(JobFailed) as failed:
        raster_contours(RasterContoursArgs(uri="src.tif", output="c.gpkg", interval=0.001, max_levels=100), ctx)
    assert failed.value.field == "interval"
