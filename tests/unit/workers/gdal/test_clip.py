"""Job `raster_clip`: by a box (the raster's CRS or another) and by a polygon layer (centres inside, or every pixel
touched), checked against pixel arithmetic and shapely over the same grid."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
import shapely
from pydantic import ValidationError
from pyproj import Transformer

from schemas.tools.raster_ops import RasterClipArgs
from tests.unit.workers.gdal.conftest import GRIDS, RasterFactory, VectorFactory
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster_ops import raster_clip

SIZE = (47, 59)


def read(path: str) -> tuple[np.ndarray, rasterio.profiles.Profile]:
    with rasterio.open(path) as out:
        return out.read(), out.profile


def pixel_boxes(crs: str) -> np.ndarray:
    left, top, res = GRIDS[crs]
    rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
    return shapely.box(left + cols * res, top - (rows + 1) * res, left + (cols + 1) * res, top - rows * res)


def test_a_box_keeps_every_pixel_it_touches_on_the_rasters_own_grid(
    ctx: JobContext, make_raster: RasterFactory
) -> None:
    make_raster(size=SIZE, count=2, crs="EPSG:32633", dtype="int16", nodata=-1)
    left, top, res = GRIDS["EPSG:32633"]
    box = [left + 150, top - 3950, left + 2020, top - 1100]

    result = raster_clip(RasterClipArgs(uri="src.tif", output="out.tif", bounds=box), ctx)

    with rasterio.open(ctx.roots[0] / "src.tif") as src:
        source = src.read()
    touched = shapely.intersects(pixel_boxes("EPSG:32633"), shapely.box(*box))
    touched &= shapely.area(shapely.intersection(pixel_boxes("EPSG:32633"), shapely.box(*box))) > 0
    rows, cols = np.nonzero(touched)
    got, profile = read(result.output.path)
    assert np.array_equal(got, source[:, rows.min() : rows.max() + 1, cols.min() : cols.max() + 1])
    assert (profile["transform"].c, profile["transform"].f) == (left + cols.min() * res, top - rows.min() * res)
    assert profile["nodata"] == -1 and (result.width, result.height) == (np.ptp(cols) + 1, np.ptp(rows) + 1)


def test_a_box_in_another_crs_is_transformed_into_the_rasters(ctx: JobContext, make_raster: RasterFactory) -> None:
    make_raster(size=SIZE, crs="EPSG:32633")
    left, top, res = GRIDS["EPSG:32633"]
    to_geo = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
    west, north = to_geo.transform(left + 1234, top - 987)
    east, south = to_geo.transform(left + 3456, top - 3210)

    result = raster_clip(
        RasterClipArgs(uri="src.tif", output="out.tif", bounds=[west, south, east, north], bounds_crs="EPSG:4326"), ctx
    )

    to_utm = Transformer.from_crs("EPSG:4326", "EPSG:32633", always_xy=True)
    ring = shapely.segmentize(shapely.box(west, south, east, north), (east - west) / 50)
    footprint = shapely.transform(ring, lambda xy: np.column_stack(to_utm.transform(*xy.T)))
    x0, y0, x1, y1 = footprint.bounds
    out_left, out_bottom, out_right, out_top = result.bounds
    assert out_left <= x0 < out_left + res and out_right - res < x1 <= out_right
    assert out_bottom <= y0 < out_bottom + res and out_top - res < y1 <= out_top


@pytest.mark.parametrize("all_touched", [False, True])
def test_a_polygon_mask_keeps_the_pixels_shapely_says_it_covers(
    ctx: JobContext, make_raster: RasterFactory, make_vector: VectorFactory, all_touched: bool
) -> None:
    """The raster in EPSG:4326 and the mask in EPSG:3857: the mask is transformed before it is burnt."""
    data = np.random.default_rng(8).normal(50, 10, SIZE).astype("float32")
    make_raster(data=data, crs="EPSG:4326")
    triangle = shapely.Polygon([(10.0713, 49.8231), (10.4419, 49.6917), (10.1537, 49.5602)])
    to_web = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    make_vector("mask.gpkg", [shapely.transform(triangle, lambda xy: np.column_stack(to_web.transform(*xy.T)))],
                crs="EPSG:3857")  # fmt: skip

    args = RasterClipArgs(uri="src.tif", output="out.tif", mask="mask.gpkg", all_touched=all_touched, crop=False)
    result = raster_clip(args, ctx)

    left, top, res = GRIDS["EPSG:4326"]
    if all_touched:
        boxes = pixel_boxes("EPSG:4326")
        covered = shapely.area(shapely.intersection(boxes, triangle)) > 1e-12
    else:
        rows, cols = np.mgrid[0 : SIZE[0], 0 : SIZE[1]]
        covered = shapely.contains_xy(triangle, left + (cols + 0.5) * res, top - (rows + 0.5) * res)
    got, profile = read(result.output.path)
    assert np.array_equal(~np.isnan(got[0]), covered)
    assert np.array_equal(got[0][covered], data[covered])
    assert result.valid_pixels == int(covered.sum()) and np.isnan(profile["nodata"])


def test_a_cropped_mask_output_is_every_pixel_the_polygons_extent_touches(
    ctx: JobContext, make_raster: RasterFactory, make_vector: VectorFactory
) -> None:
    make_raster(size=SIZE, crs="EPSG:4326", dtype="uint8")
    extent = shapely.box(10.1037, 49.7213, 10.2561, 49.8322)
    make_vector("mask.gpkg", [extent], crs="EPSG:4326")

    result = raster_clip(RasterClipArgs(uri="src.tif", output="out.tif", mask="mask.gpkg"), ctx)

    touched = shapely.area(shapely.intersection(pixel_boxes("EPSG:4326"), extent)) > 0
    r, c = np.nonzero(touched)
    assert (result.height, result.width) == (np.ptp(r) + 1, np.ptp(c) + 1)
    got, profile = read(result.output.path)
    assert profile["nodata"] == 0 and result.valid_pixels == int(np.count_nonzero(got[0]))


def test_a_box_that_misses_the_raster_fails_naming_bounds_and_the_rasters_extent_before_writing(
    ctx: JobContext, make_raster: RasterFactory
) -> None:
    make_raster(size=SIZE, crs="EPSG:32633")
    left, top, res = GRIDS["EPSG:32633"]

    with pytest.raises(JobFailed) as caught:
        raster_clip(RasterClipArgs(uri="src.tif", output="new/out.tif", bounds=[0, 0, 10, 10]), ctx)

    assert (caught.value.code, caught.value.field) == ("clip.no_overlap", "bounds")
    extent = [left, top - SIZE[0] * res, left + SIZE[1] * res, top]
    assert caught.value.details == {"valid": extent, "crs": "EPSG:32633"}
    assert str(extent) in caught.value.message
    assert not (ctx.roots[0] / "new").exists()  # not even the output's folder


def test_a_box_in_another_crs_that_misses_is_told_the_rasters_extent_in_that_crs(
    ctx: JobContext, make_raster: RasterFactory
) -> None:
    make_raster(size=SIZE, crs="EPSG:32633")
    left, top, res = GRIDS["EPSG:32633"]
    args = RasterClipArgs(uri="src.tif", output="out.tif", bounds=[100.0, 10.0, 101.0, 11.0], bounds_crs="EPSG:4326")

    with pytest.raises(JobFailed) as caught:
        raster_clip(args, ctx)

    west, south, east, north = caught.value.details["valid"]
    to_geo = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)
    corners = [to_geo.transform(x, y) for x in (left, left + SIZE[1] * res) for y in (top, top - SIZE[0] * res)]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]  # the corners are inside (9 decimals kept)
    assert west <= min(xs) + 1e-9 and east >= max(xs) - 1e-9 and south <= min(ys) + 1e-9 and north >= max(ys) - 1e-9
    assert 14 < west < east < 16 and 49 < south < north < 51 and caught.value.details["crs"] == "EPSG:4326"


def test_a_mask_that_misses_the_raster_fails_naming_mask(
    ctx: JobContext, make_raster: RasterFactory, make_vector: VectorFactory
) -> None:
    make_raster(size=SIZE, crs="EPSG:4326")
    make_vector("far.gpkg", [shapely.box(100, 10, 101, 11)], crs="EPSG:4326")

    with pytest.raises(JobFailed) as caught:
        raster_clip(RasterClipArgs(uri="src.tif", output="out.tif", mask="far.gpkg"), ctx)

    assert (caught.value.code, caught.value.field) == ("clip.no_overlap", "mask")


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"bounds": [0, 0, 1, 1], "mask": "m.gpkg"},
        {"bounds": [1, 0, 0, 1]},
        {"mask": "m", "bounds_crs": "EPSG:4326"},
    ],
)
def test_one_way_to_clip_is_required(extra: dict, tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        RasterClipArgs.model_validate({"uri": "src.tif", "output": "out.tif", **extra})
