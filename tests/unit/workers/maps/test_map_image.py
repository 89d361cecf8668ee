"""Job `map_image`: the PNG decoded shows what the structured result says, within one image block: class colours at
known features' pixels, a layer in another CRS where it belongs, the layers' order, the legend's classes."""

import base64
import io
from pathlib import Path

import geopandas as gpd
import mapclassify
import numpy as np
import pytest
import rasterio
from affine import Affine
from PIL import Image
from pydantic import ValidationError
from pyproj import Geod, Transformer
from shapely.geometry import Point, box

from schemas.content import MAX_BLOCK_CHARS
from schemas.tools.maps import MAX_LAYERS, MapImageArgs, MapImageResult
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.maps import map_image

pytestmark = [
    pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning"),  # rasterio × affine 3
    pytest.mark.filterwarnings("ignore:Numba not installed:UserWarning"),  # the test's own mapclassify.FisherJenks
]

UTM = "EPSG:32633"
WEST, NORTH = 600_000.0, 5_340_000.0


@pytest.fixture
def ctx(tmp_path: Path) -> JobContext:
    return JobContext(call_id="test-call", roots=[tmp_path])


def layer(path: Path, geometries: list, crs: str = UTM, **columns: list) -> str:
    gpd.GeoDataFrame(columns, geometry=geometries, crs=crs).to_file(path)
    return path.name


def raster(path: Path, data: np.ndarray, crs: str = UTM, pixel: float = 10.0) -> str:
    profile = {"driver": "GTiff", "width": data.shape[-1], "height": data.shape[-2], "count": 1, "dtype": data.dtype}
    with rasterio.open(path, "w", crs=crs, transform=Affine(pixel, 0, WEST, 0, -pixel, NORTH), **profile) as out:
        out.write(data, 1)
    return path.name


def picture(result: MapImageResult) -> np.ndarray:
    """The PNG decoded by Pillow, as RGB rows."""
    block = result.blocks()[0]
    assert block.mime_type == "image/png" and len(block.data) <= MAX_BLOCK_CHARS
    image = Image.open(io.BytesIO(base64.b64decode(block.data)))
    assert image.format == "PNG" and image.size == (result.width, result.height)
    return np.asarray(image.convert("RGB")).astype("int64")


def at(result: MapImageResult, x: float, y: float) -> tuple[int, int]:
    """The picture's (row, column) of map coordinates, from the extent and frame the result states."""
    left, bottom, right, top = result.bounds
    x0, y0, x1, y1 = result.frame
    return int(y0 + (top - y) / (top - bottom) * (y1 - y0)), int(x0 + (x - left) / (right - left) * (x1 - x0))


def rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])


def test_each_polygon_is_drawn_in_its_quantile_class_colour_and_the_legend_has_the_classes(
    tmp_path: Path, ctx: JobContext
) -> None:
    values = [3.0, 8.0, 15.0, 40.0, 41.0, 90.0]
    squares = [box(WEST + 300 * i, NORTH - 600, WEST + 300 * i + 250, NORTH - 100) for i in range(6)]
    uri = layer(tmp_path / "parcels.gpkg", squares, value=values)

    result = map_image(MapImageArgs(layers=[{"kind": "vector", "uri": uri, "field": "value", "classes": 3}]), ctx)

    drawn = result.layers[0]
    want = mapclassify.Quantiles(np.array(values), k=3)
    assert drawn.mode == "quantiles" and drawn.breaks == pytest.approx(list(want.bins))
    assert [c.count for c in drawn.classes] == list(want.counts)
    image = picture(result)
    for square, cls in zip(squares, want.yb, strict=True):
        row, col = at(result, square.centroid.x, square.centroid.y)
        assert np.abs(image[row, col] - rgb(drawn.classes[cls].colour)).max() <= 2


def test_natural_breaks_and_equal_interval_are_mapclassify_s(tmp_path: Path, ctx: JobContext) -> None:
    values = [1.0, 2.0, 2.5, 10.0, 11.0, 30.0, 31.0, 32.0]
    uri = layer(tmp_path / "v.gpkg", [Point(WEST + 10 * i, NORTH - 10 * i) for i in range(8)], value=values)
    args = lambda scheme: MapImageArgs(  # noqa: E731
        layers=[{"kind": "vector", "uri": uri, "field": "value", "scheme": scheme, "classes": 3}]
    )

    jenks = map_image(args("natural_breaks"), ctx).layers[0]
    equal = map_image(args("equal_interval"), ctx).layers[0]

    assert jenks.breaks == pytest.approx(list(mapclassify.FisherJenks(np.array(values), k=3).bins))
    assert equal.breaks == pytest.approx(list(mapclassify.EqualInterval(np.array(values), k=3).bins))


def test_categories_get_one_colour_each_in_the_legend(tmp_path: Path, ctx: JobContext) -> None:
    squares = [box(WEST + 300 * i, NORTH - 300, WEST + 300 * i + 250, NORTH) for i in range(3)]
    uri = layer(tmp_path / "land.gpkg", squares, kind=["forest", "water", "forest"])

    result = map_image(MapImageArgs(layers=[{"kind": "vector", "uri": uri, "field": "kind"}]), ctx)

    classes = result.layers[0].classes
    assert [(c.value, c.count) for c in classes] == [("forest", 2), ("water", 1)]
    image = picture(result)
    for square, value in zip(squares, ["forest", "water", "forest"], strict=True):
        row, col = at(result, square.centroid.x, square.centroid.y)
        colour = next(c.colour for c in classes if c.value == value)
        assert np.abs(image[row, col] - rgb(colour)).max() <= 2


def test_a_point_in_geographic_coordinates_lands_on_its_pixel_over_a_utm_raster(
    tmp_path: Path, ctx: JobContext
) -> None:
    """The map takes the first layer's CRS (UTM 33N); the wells layer is in EPSG:4326 and is reprojected."""
    dem = raster(tmp_path / "dem.tif", np.full((100, 120), 500.0, dtype="float32"))
    to_lonlat = Transformer.from_crs(UTM, "EPSG:4326", always_xy=True)
    lon, lat = to_lonlat.transform(WEST + 830.0, NORTH - 270.0)
    wells = layer(tmp_path / "wells.gpkg", [Point(lon, lat)], crs="EPSG:4326", name=["w1"])
    red = {"kind": "vector", "uri": wells, "fill": "#ff0000", "stroke": "#ff0000"}

    result = map_image(MapImageArgs(layers=[{"kind": "raster", "uri": dem, "colormap": "gray"}, red]), ctx)

    assert result.crs == UTM and result.layers[1].crs == "EPSG:4326" and result.layers[1].features == 1
    row, col = at(result, WEST + 830.0, NORTH - 270.0)
    assert np.abs(picture(result)[row, col] - [255, 0, 0]).max() <= 2


def test_a_layer_drawn_later_covers_one_drawn_before(tmp_path: Path, ctx: JobContext) -> None:
    first = layer(tmp_path / "a.gpkg", [box(WEST, NORTH - 500, WEST + 500, NORTH)])
    second = layer(tmp_path / "b.gpkg", [box(WEST + 250, NORTH - 750, WEST + 750, NORTH - 250)])
    red, blue = {"fill": "#ff0000", "stroke": "#ff0000"}, {"fill": "#0000ff", "stroke": "#0000ff"}
    a, b = {"kind": "vector", "uri": first, **red}, {"kind": "vector", "uri": second, **blue}

    one_way = map_image(MapImageArgs(layers=[a, b]), ctx)
    other_way = map_image(MapImageArgs(layers=[b, a]), ctx)

    overlap = (WEST + 375, NORTH - 375)
    assert tuple(picture(one_way)[at(one_way, *overlap)]) == (0, 0, 255)
    assert tuple(picture(other_way)[at(other_way, *overlap)]) == (255, 0, 0)


def test_a_noisy_raster_map_is_quantised_or_drawn_smaller_to_fit_one_block(tmp_path: Path, ctx: JobContext) -> None:
    noise = np.random.default_rng(3).normal(0, 1, (900, 1200)).astype("float32")
    uri = raster(tmp_path / "noise.tif", noise, pixel=1.0)

    result = map_image(MapImageArgs(layers=[{"kind": "raster", "uri": uri}], width=1200, height=900), ctx)

    picture(result)  # decodes, its size is the stated one and its base64 fits a block
    assert result.image_bytes <= MAX_BLOCK_CHARS // 4 * 3
    assert result.reduction is not None and (result.colours is not None or result.width < 1200)


def test_a_stretch_reports_its_range_and_ramp_in_the_legend(tmp_path: Path, ctx: JobContext) -> None:
    data = np.tile(np.linspace(0, 100, 120, dtype="float32"), (100, 1))
    uri = raster(tmp_path / "ramp.tif", data)

    drawn = map_image(MapImageArgs(layers=[{"kind": "raster", "uri": uri, "percentiles": [0, 100]}]), ctx).layers[0]

    assert drawn.mode == "stretch" and drawn.breaks == pytest.approx([0.0, 100.0], abs=1.0)
    assert drawn.classes[0].colour == "#440154" and drawn.classes[-1].colour == "#fde725"  # viridis' ends


def test_the_scale_bar_is_true_at_the_centre_of_a_geographic_map(tmp_path: Path, ctx: JobContext) -> None:
    uri = layer(tmp_path / "p.gpkg", [box(10.0, 60.0, 12.0, 61.0)], crs="EPSG:4326")

    result = map_image(MapImageArgs(layers=[{"kind": "vector", "uri": uri}]), ctx)

    left, bottom, right, top = result.bounds
    lat, degrees_per_pixel = (bottom + top) / 2, (right - left) / (result.frame[2] - result.frame[0])
    metres = Geod(ellps="WGS84").inv(11.0, lat, 11.0 + degrees_per_pixel, lat)[2]
    assert result.scale_bar is not None
    assert result.scale_bar.metres_per_pixel == pytest.approx(metres, rel=1e-3)
    assert result.scale_bar.pixels == pytest.approx(result.scale_bar.length_m / metres, rel=1e-3)
    assert result.north_deg == pytest.approx(0.0, abs=1e-6)


def test_a_missing_field_is_an_error_on_that_layer_s_field(tmp_path: Path, ctx: JobContext) -> None:
    uri = layer(tmp_path / "p.gpkg", [box(WEST, NORTH - 10, WEST + 10, NORTH)], name=["a"])

    with pytest.raises(JobFailed) as failed:
        map_image(MapImageArgs(layers=[{"kind": "vector", "uri": uri, "label": "nmae"}]), ctx)

    assert (failed.value.code, failed.value.field) == ("field.not_found", "layers[0].label")


def test_a_layer_outside_the_extent_is_reported_not_drawn(tmp_path: Path, ctx: JobContext) -> None:
    near = layer(tmp_path / "near.gpkg", [box(WEST, NORTH - 100, WEST + 100, NORTH)])
    far = layer(tmp_path / "far.gpkg", [box(WEST + 50_000, NORTH - 100, WEST + 50_100, NORTH)])
    bounds = (WEST - 50, NORTH - 150, WEST + 150, NORTH + 50)

    result = map_image(
        MapImageArgs(layers=[{"kind": "vector", "uri": near}, {"kind": "vector", "uri": far}], bounds=bounds), ctx
    )

    assert [d.drawn for d in result.layers] == [True, False]
    assert any("layers[1]" in note for note in result.notes)


def test_a_path_outside_the_workspace_is_refused(ctx: JobContext) -> None:
    with pytest.raises(JobFailed) as failed:
        map_image(MapImageArgs(layers=[{"kind": "raster", "uri": "../elsewhere.tif"}]), ctx)

    assert failed.value.code.startswith("path.") and failed.value.field == "layers[0].uri"


def test_a_map_has_at_most_max_layers() -> None:
    with pytest.raises(ValidationError):
        MapImageArgs(layers=[{"kind": "raster", "uri": "dem.tif"}] * (MAX_LAYERS + 1))
