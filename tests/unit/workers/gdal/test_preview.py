"""Jobs `raster_preview` and `vector_preview`: the PNG decodes to what the stated numbers say, within the size bound."""

import base64
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import rasterio
import shapely
from affine import Affine
from pyproj import Geod
from rasterio.io import MemoryFile
from rio_tiler.colormap import cmap

from schemas.content import MAX_BLOCK_CHARS, ImageBlock
from schemas.tools.previews import RasterPreviewArgs, VectorPreviewArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.previews import raster_preview, vector_preview

pytestmark = [
    pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning"),  # rasterio 1.4 × affine 3
    pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning"),  # the PNGs read back
]

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]
NODATA = -9999.0


def decoded(block: ImageBlock) -> np.ndarray:
    """The picture's bands (RGBA or gray+alpha), read back by GDAL's PNG driver."""
    assert block.mime_type == "image/png"
    with MemoryFile(base64.b64decode(block.data)) as mem, mem.open() as png:
        assert png.driver == "PNG"
        return png.read()


def test_stretch_uses_the_percentiles_of_the_valid_pixels(make_raster: RasterFactory, ctx: JobContext) -> None:
    """An odd-sized raster smaller than max_size is shown pixel for pixel: the PNG is the stretch of its values."""
    rng = np.random.default_rng(5)
    data = rng.normal(50, 10, (31, 45)).astype("float32")
    data[3:9, 4:11] = NODATA
    make_raster(data=data, nodata=NODATA, crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", colormap="gray", percentiles=[5, 95]), ctx)

    valid = data[data != NODATA].astype("float64")
    lo, hi = np.percentile(valid, [5, 95])
    assert (result.mode, result.width, result.height, result.colormap) == ("stretch", 45, 31, "gray")
    assert (result.stretch_min, result.stretch_max) == (pytest.approx([lo]), pytest.approx([hi]))
    picture = decoded(result.blocks()[0])
    assert picture.shape[1:] == (31, 45)
    want = np.clip((data.astype("float64") - lo) / (hi - lo) * 255, 0, 255)
    shown = data != NODATA
    ramp = np.array([cmap.get("gray")[i][0] for i in range(256)], dtype="int64")  # the colormap's own table
    index = np.floor(want[shown]).astype("int64")  # rio-tiler rescales to float, then truncates to uint8
    got = picture[0][shown].astype("int64")
    assert (got == ramp[index]).mean() > 0.99  # the rest sit on a step's edge: float32 vs float64 rounding
    assert np.isin(got - ramp[index], [-1, 0, 1]).all()
    assert (picture[-1][~shown] == 0).all() and (picture[-1][shown] == 255).all()


def test_rgb_stretches_each_band(make_raster: RasterFactory, ctx: JobContext) -> None:
    rng = np.random.default_rng(6)
    data = np.stack([rng.integers(0, 4000, (21, 33)) * (b + 1) for b in range(4)]).astype("uint16")
    make_raster(data=data, dtype="uint16", count=4, crs="EPSG:3857")

    result = raster_preview(RasterPreviewArgs(uri="src.tif"), ctx)

    assert (result.mode, result.bands, result.colormap) == ("rgb", [1, 2, 3], None)
    picture = decoded(result.blocks()[0])
    for i in range(3):
        lo, hi = np.percentile(data[i].astype("float64"), [2, 98])
        assert (result.stretch_min[i], result.stretch_max[i]) == (pytest.approx(lo), pytest.approx(hi))
        want = np.floor(np.clip((data[i] - lo) / (hi - lo) * 255, 0, 255))
        assert np.abs(picture[i] - want).max() <= 1.0


def test_hillshade_of_a_plane_matches_the_light_angle(tmp_path: Path, ctx: JobContext) -> None:
    """A DEM rising eastwards with gradient g, lit from the west at altitude a: every cell is sin(a + atan(g))."""
    g, cell = 0.4, 25.0
    cols = np.arange(41, dtype="float64")
    z = np.tile(100 + g * cell * cols, (27, 1)).astype("float32")
    with rasterio.open(
        tmp_path / "plane.tif", "w", driver="GTiff", width=41, height=27, count=1, dtype="float32",
        crs="EPSG:32633", transform=Affine(cell, 0, 500_000, 0, -cell, 5_000_000),
    ) as dst:  # fmt: skip
        dst.write(z, 1)

    result = raster_preview(RasterPreviewArgs(uri="plane.tif", mode="hillshade", azimuth=270, altitude=30), ctx)

    want = 255 * np.sin(np.radians(30) + np.arctan(g))
    picture = decoded(result.blocks()[0])
    assert result.hillshade is not None and result.hillshade["pixel_width_m"] == pytest.approx(cell)
    assert np.abs(picture[0].astype("float64") - want).max() <= 1.0


def test_hillshade_in_a_geographic_crs_measures_pixels_in_metres(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(size=(33, 47), crs="EPSG:4326")  # 0.01° pixels at 49.8°N

    result = raster_preview(RasterPreviewArgs(uri="src.tif", mode="hillshade"), ctx)

    assert result.hillshade is not None
    _, bottom, _, top = result.bounds
    lat = (bottom + top) / 2
    _, _, east = Geod(ellps="WGS84").inv(10.0, lat, 10.01, lat)
    _, _, north = Geod(ellps="WGS84").inv(10.0, lat, 10.0, lat + 0.01)
    assert (result.hillshade["pixel_width_m"], result.hillshade["pixel_height_m"]) == (
        pytest.approx(east, rel=1e-3),
        pytest.approx(north, rel=1e-3),
    )


def test_a_large_raster_is_bounded_and_fits_one_image_block(make_raster: RasterFactory, ctx: JobContext) -> None:
    rng = np.random.default_rng(7)
    make_raster(data=rng.normal(0, 1, (900, 1501)).astype("float32"), crs="EPSG:32633")

    result = raster_preview(RasterPreviewArgs(uri="src.tif", max_size=1024, colormap="viridis", format="png"), ctx)

    block = result.blocks()[0]
    assert len(block.data) <= MAX_BLOCK_CHARS and result.image_bytes == len(base64.b64decode(block.data))
    assert max(result.width, result.height) <= 1024
    assert result.width / result.height == pytest.approx(1501 / 900, rel=0.02)
    assert decoded(block).shape[1:] == (result.height, result.width)


def test_errors_name_the_field(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster()
    with pytest.raises(JobFailed) as colormap:
        raster_preview(RasterPreviewArgs(uri="src.tif", colormap="no-such-ramp"), ctx)
    with pytest.raises(JobFailed) as bands:
        raster_preview(RasterPreviewArgs(uri="src.tif", bands=[4]), ctx)
    with pytest.raises(JobFailed) as rgb:
        raster_preview(RasterPreviewArgs(uri="src.tif", mode="rgb"), ctx)
    assert (colormap.value.field, bands.value.field, rgb.value.field) == ("colormap", "bands", "mode")


def test_vector_preview_fills_polygons_and_leaves_the_rest_blank(make_vector: VectorFactory, ctx: JobContext) -> None:
    squares = [shapely.box(10.0, 49.0, 10.2, 49.1), shapely.box(10.5, 49.3, 10.6, 49.45)]
    make_vector("zones.gpkg", squares)

    result = vector_preview(VectorPreviewArgs(uri="zones.gpkg", max_size=300, fill=[200, 10, 10]), ctx)

    assert (result.feature_count, result.bounds) == (2, pytest.approx([10.0, 49.0, 10.6, 49.45]))
    picture = decoded(result.blocks()[0])
    assert max(result.width, result.height) == 300 and picture.shape[1:] == (result.height, result.width)
    pad = 0.03 * 0.6
    to_pixel = ~rasterio.transform.from_bounds(
        10.0 - pad, 49.0 - pad, 10.6 + pad, 49.45 + pad, result.width, result.height
    )
    inside = [int(v) for v in to_pixel * (10.1, 49.05)]
    outside = [int(v) for v in to_pixel * (10.4, 49.2)]
    assert tuple(picture[:3, inside[1], inside[0]]) == (200, 10, 10)
    assert tuple(picture[:3, outside[1], outside[0]]) == (255, 255, 255)


def test_vector_preview_draws_lines_and_points_in_the_stroke_colour(
    make_vector: VectorFactory, ctx: JobContext
) -> None:
    line = shapely.LineString([(500_000, 5_540_000), (504_000, 5_540_000)])
    point = shapely.Point(502_000, 5_542_000)
    make_vector("lines.gpkg", [line, point], crs="EPSG:32633")

    result = vector_preview(VectorPreviewArgs(uri="lines.gpkg", max_size=200, stroke=[0, 90, 0]), ctx)

    picture = decoded(result.blocks()[0])
    assert (result.width, result.height) == (200, round(200 * (2000 + 240) / (4000 + 240)))
    pad = 0.03 * 4000
    to_pixel = ~rasterio.transform.from_bounds(
        500_000 - pad, 5_540_000 - pad, 504_000 + pad, 5_542_000 + pad, result.width, result.height
    )
    for x, y in [(502_000, 5_540_000), (502_000, 5_542_000)]:
        col, row = (int(v) for v in to_pixel * (x, y))
        near = picture[:3, max(row - 1, 0) : row + 2, max(col - 1, 0) : col + 2].reshape(3, -1).T
        assert any(tuple(p) == (0, 90, 0) for p in near)
    assert (picture[:3] == 255).all(axis=0).mean() > 0.9  # the rest is blank


@pytest.mark.parametrize("shape", [(1, 40), (30, 1), (1, 1)], ids=["one row", "one column", "one pixel"])
def test_hillshade_of_a_single_row_or_column_shades_along_the_axis_it_has(
    shape: tuple[int, int], tmp_path: Path, ctx: JobContext
) -> None:
    """A DEM one pixel high or wide, rising eastwards or southwards with gradient g, lit from the west at altitude
    a: a row shades as a plane rising east does, sin(a + atan(g)); a column's slope runs across the light,
    sin(a) / sqrt(1 + g²); a single pixel is flat, sin(a). Across the missing axis the surface is flat."""
    g, cell = 0.4, 25.0
    z = (100 + g * cell * np.arange(shape[0] * shape[1], dtype="float64")).reshape(shape).astype("float32")
    with rasterio.open(
        tmp_path / "line.tif", "w", driver="GTiff", width=shape[1], height=shape[0], count=1, dtype="float32",
        crs="EPSG:32633", transform=Affine(cell, 0, 500_000, 0, -cell, 5_000_000),
    ) as dst:  # fmt: skip
        dst.write(z, 1)

    result = raster_preview(RasterPreviewArgs(uri="line.tif", mode="hillshade", azimuth=270, altitude=30), ctx)

    picture = decoded(result.blocks()[0])[0].astype("float64")
    assert (result.width, result.height) == (shape[1], shape[0])
    a = np.radians(30)
    want = {(1, 40): np.sin(a + np.arctan(g)), (30, 1): np.sin(a) / np.hypot(1, g), (1, 1): np.sin(a)}[shape] * 255
    assert np.abs(picture - want).max() <= 1.0
