"""Jobs `raster_info` and `vector_info` on generated files."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import rasterio
import rasterio.transform
from rasterio.enums import ColorInterp

from schemas.tools.raster import RasterInfoArgs
from schemas.tools.vector import VectorInfoArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster import raster_info
from workers.tools.vector import vector_info

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]


@pytest.mark.parametrize(("dtype", "crs"), [("uint8", "EPSG:4326"), ("int16", "EPSG:3857"), ("float32", "EPSG:32633")])
def test_raster_info_reports_what_rasterio_reads(
    make_raster: RasterFactory, ctx: JobContext, dtype: str, crs: str
) -> None:
    path = make_raster(dtype=dtype, crs=crs, nodata=0, count=2)

    result = raster_info(RasterInfoArgs(uri=path.name), ctx)

    with rasterio.open(path) as src:
        assert (result.width, result.height, result.count, result.dtype) == (src.width, src.height, 2, dtype)
        assert result.crs == crs
        assert result.bounds == list(src.bounds)
        assert result.transform == list(src.transform)[:6]
    assert result.nodata == 0
    assert [b.index for b in result.bands] == [1, 2]
    assert crs in result.summary()


def test_raster_info_for_one_band_reports_only_that_band(make_raster: RasterFactory, ctx: JobContext) -> None:
    path = make_raster(count=3)

    result = raster_info(RasterInfoArgs(uri=path.name, band=2), ctx)

    assert [b.index for b in result.bands] == [2]


def test_raster_info_gives_each_bands_colour_interpretation(tmp_path: Path, ctx: JobContext) -> None:
    """An RGBA GeoTIFF (photometric RGB, an alpha band) and a paletted one: GDAL's interpretation per band."""
    profile = {"driver": "GTiff", "width": 8, "height": 8, "dtype": "uint8", "crs": "EPSG:4326"}
    profile["transform"] = rasterio.transform.from_origin(10, 50, 0.01, 0.01)
    with rasterio.open(tmp_path / "rgba.tif", "w", count=4, photometric="RGB", **profile) as dst:
        dst.write(np.zeros((4, 8, 8), dtype="uint8"))
        dst.colorinterp = [ColorInterp.red, ColorInterp.green, ColorInterp.blue, ColorInterp.alpha]
    with rasterio.open(tmp_path / "classes.tif", "w", count=1, **profile) as dst:
        dst.write(np.zeros((1, 8, 8), dtype="uint8"))
        dst.write_colormap(1, {0: (0, 0, 0, 255), 1: (0, 128, 0, 255)})

    rgba = raster_info(RasterInfoArgs(uri="rgba.tif"), ctx)
    classes = raster_info(RasterInfoArgs(uri="classes.tif"), ctx)

    assert [b.color_interp for b in rgba.bands] == ["red", "green", "blue", "alpha"]
    assert [b.color_interp for b in classes.bands] == ["palette"]


def test_raster_info_on_a_missing_band_fails_naming_the_band(make_raster: RasterFactory, ctx: JobContext) -> None:
    path = make_raster(count=1)

    with pytest.raises(JobFailed) as failed:
        raster_info(RasterInfoArgs(uri=path.name, band=4), ctx)

    assert (failed.value.code, failed.value.field) == ("band.out_of_range", "band")


def test_raster_info_on_a_text_file_fails_as_not_geospatial(tmp_path: Path, ctx: JobContext) -> None:
    (tmp_path / "notes.tif").write_text("these are not pixels\n")

    with pytest.raises(JobFailed) as failed:
        raster_info(RasterInfoArgs(uri="notes.tif"), ctx)

    assert (failed.value.code, failed.value.field) == ("gdal.not_geospatial", "uri")


def test_raster_info_on_a_truncated_tiff_fails_as_corrupt(make_raster: RasterFactory, ctx: JobContext) -> None:
    path = make_raster(size=(512, 512))
    path.write_bytes(path.read_bytes()[:16])  # the TIFF header survives, its first directory does not

    with pytest.raises(JobFailed) as failed:
        raster_info(RasterInfoArgs(uri=path.name), ctx)

    assert (failed.value.code, failed.value.field) == ("gdal.corrupt", "uri")


def test_vector_info_reports_layer_crs_count_and_bounds(make_vector: VectorFactory, ctx: JobContext) -> None:
    path = make_vector("parcels.gpkg")

    result = vector_info(VectorInfoArgs(uri=path.name), ctx)

    assert (result.driver, result.layer, result.layers) == ("GPKG", "parcels", ["parcels"])
    assert (result.crs, result.feature_count, result.geometry_type) == ("EPSG:4326", 6, "Polygon")
    assert result.bounds == pytest.approx([10.0, 49.0, 11.1, 49.1])
    assert [f.name for f in result.fields] == ["id", "name"]


def test_vector_info_reads_geojson(make_vector: VectorFactory, ctx: JobContext) -> None:
    path = make_vector("parcels.geojson", driver="GeoJSON")

    result = vector_info(VectorInfoArgs(uri=path.name), ctx)

    assert (result.driver, result.feature_count) == ("GeoJSON", 6)


def test_vector_info_on_an_unknown_layer_fails_naming_the_layer(make_vector: VectorFactory, ctx: JobContext) -> None:
    path = make_vector("parcels.gpkg")

    with pytest.raises(JobFailed) as failed:
        vector_info(VectorInfoArgs(uri=path.name, layer="roads"), ctx)

    assert (failed.value.code, failed.value.field) == ("layer.not_found", "layer")


def test_vector_info_on_a_text_file_fails_as_not_geospatial(tmp_path: Path, ctx: JobContext) -> None:
    (tmp_path / "notes.gpkg").write_text("not a database\n")

    with pytest.raises(JobFailed) as failed:
        vector_info(VectorInfoArgs(uri="notes.gpkg"), ctx)

    assert (failed.value.code, failed.value.field) == ("gdal.not_geospatial", "uri")
