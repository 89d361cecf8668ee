"""Job `raster_convert`: outputs reopen with the requested driver, compression, tiling and overviews."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import rasterio
from pydantic import ValidationError

from schemas.tools.raster import RasterConvertArgs
from workers.gdal import blocks
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled, JobFailed
from workers.tools.raster import raster_convert

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3

RasterFactory = Callable[..., Path]
CancelledAtLastReport = Callable[[Callable[[str, JobContext], object]], None]


def convert_args(**overrides: object) -> RasterConvertArgs:
    return RasterConvertArgs.model_validate({"uri": "src.tif", "output": "out.tif"} | overrides)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32"])
@pytest.mark.parametrize("compression", ["deflate", "lzw", "zstd"])
def test_converted_geotiff_has_the_compression_tiling_and_same_pixels(
    make_raster: RasterFactory, ctx: JobContext, dtype: str, compression: str
) -> None:
    source = make_raster(dtype=dtype, crs="EPSG:3857", size=(300, 520))

    result = raster_convert(convert_args(compression=compression, blockxsize=128, blockysize=64), ctx)

    with rasterio.open(source) as src, rasterio.open(result.output.path) as out:
        assert (out.driver, out.compression.value.lower(), out.crs) == ("GTiff", compression, src.crs)
        assert out.block_shapes[0] == (64, 128)
        assert out.transform == src.transform
        np.testing.assert_array_equal(out.read(), src.read())
    assert result.compression == compression


def test_convert_without_tiling_writes_strips(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(size=(64, 96))

    result = raster_convert(convert_args(tiled=False), ctx)

    with rasterio.open(result.output.path) as out:
        assert out.block_shapes[0][1] == 96


def test_convert_builds_the_requested_overviews(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(size=(256, 256))

    result = raster_convert(convert_args(overviews=[2, 4, 8], overview_resampling="nearest"), ctx)

    with rasterio.open(result.output.path) as out:
        assert out.overviews(1) == [2, 4, 8]
    assert result.overviews_built == [2, 4, 8]


def test_convert_to_cog_gives_a_cloud_optimised_geotiff_with_overviews(
    make_raster: RasterFactory, ctx: JobContext
) -> None:
    make_raster(dtype="int16", size=(1024, 1024))

    result = raster_convert(convert_args(driver="COG", compression="deflate", blockxsize=512), ctx)

    with rasterio.open(result.output.path) as out:
        assert out.tags(ns="IMAGE_STRUCTURE").get("LAYOUT") == "COG"
        assert out.compression.value.lower() == "deflate"
        assert out.block_shapes[0] == (512, 512)
        assert out.overviews(1)
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["out.tif", "src.tif"]


@pytest.mark.parametrize(("driver", "name"), [("PNG", "out.png"), ("JPEG", "out.jpg")])
def test_convert_to_png_or_jpeg_reopens_georeferenced_with_that_driver(
    make_raster: RasterFactory, ctx: JobContext, driver: str, name: str
) -> None:
    source = make_raster(dtype="uint8", count=3)

    result = raster_convert(convert_args(output=name, driver=driver), ctx)

    with rasterio.open(source) as src, rasterio.open(result.output.path) as out:
        assert (out.driver, out.count, out.crs, out.transform) == (driver, 3, src.crs, src.transform)
    assert result.output.driver == driver
    assert not [p.name for p in ctx.roots[0].iterdir() if ".partial" in p.name]


def test_compression_for_png_is_refused_naming_compression(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(dtype="uint8")

    with pytest.raises(JobFailed) as failed:
        raster_convert(convert_args(output="out.png", driver="PNG", compression="deflate"), ctx)

    assert (failed.value.code, failed.value.field) == ("option.unsupported", "compression")


def test_an_unknown_driver_is_refused_naming_driver(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster()

    with pytest.raises(JobFailed) as failed:
        raster_convert(convert_args(output="out.xyz", driver="NoSuchDriver"), ctx)

    assert (failed.value.code, failed.value.field) == ("driver.unknown", "driver")
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["src.tif"]


def test_gdal_mcp_nested_options_are_accepted() -> None:
    args = RasterConvertArgs.model_validate(
        {"uri": "a.tif", "output": "b.tif", "options": {"driver": "COG", "compression": "zstd", "overviews": [2]}}
    )

    assert (args.driver, args.compression, args.overviews) == ("COG", "zstd", [2])


def test_conflicting_nested_and_top_level_options_are_refused() -> None:
    with pytest.raises(ValidationError):
        RasterConvertArgs.model_validate({"uri": "a", "output": "b", "driver": "PNG", "options": {"driver": "COG"}})


def test_block_size_must_be_a_multiple_of_16() -> None:
    with pytest.raises(ValidationError) as invalid:
        convert_args(blockxsize=100)

    assert invalid.value.errors()[0]["loc"] == ("blockxsize",)


def test_cancelled_convert_leaves_no_file(
    make_raster: RasterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blocks, "BLOCK_PIXELS", 256 * 256)
    make_raster(dtype="uint8", size=(600, 300))
    ctx = JobContext(call_id="c", roots=[tmp_path], sink=lambda p, t, m: True)

    with pytest.raises(JobCancelled):
        raster_convert(convert_args(driver="COG"), ctx)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.tif"]


@pytest.mark.parametrize("driver", ["GTiff", "COG"])
def test_a_cancel_that_lands_with_the_last_report_leaves_no_file(
    make_raster: RasterFactory, cancelled_at_last_report: CancelledAtLastReport, driver: str
) -> None:
    make_raster(dtype="uint8", size=(600, 300))

    cancelled_at_last_report(lambda output, ctx: raster_convert(convert_args(output=output, driver=driver), ctx))


@pytest.mark.parametrize(("driver", "name"), [("MEM", "out.mem"), ("PDS4", "out.xml"), ("MVT", "out.mvt")])
def test_drivers_that_write_no_single_raster_file_are_refused_before_any_work(
    driver: str, name: str, make_raster: RasterFactory, ctx: JobContext
) -> None:
    make_raster()

    with pytest.raises(JobFailed) as refused:
        raster_convert(convert_args(output=name, driver=driver), ctx)

    assert (refused.value.code, refused.value.field) == ("driver.unsupported", "driver")
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["src.tif"]


def test_a_driver_off_the_output_list_is_refused_naming_driver_and_leaves_nothing(
    make_raster: RasterFactory, ctx: JobContext
) -> None:
    """ENVI is not on the raster outputs (`workers.gdal.drivers`): refused before any work, no file left."""
    make_raster()
    before = {p.name for p in ctx.roots[0].iterdir()}

    with pytest.raises(JobFailed) as refused:
        raster_convert(convert_args(output="out.img", driver="ENVI"), ctx)

    assert (refused.value.code, refused.value.field) == ("driver.unknown", "driver")
    assert {p.name for p in ctx.roots[0].iterdir()} == before


def test_a_gdal_error_names_the_workspace_file_not_the_pinned_descriptor(
    make_raster: RasterFactory, ctx: JobContext
) -> None:
    """GDAL is handed `/proc/self/fd/<N>/<name>` (`workers.jobkit.confine.pinned`); its messages must show the
    user's names: here GDAL cannot create the output, because a folder sits at its temporary name."""
    make_raster()
    (ctx.roots[0] / "sub").mkdir()
    (ctx.roots[0] / "sub" / ".out.geogate.local.partial.tif").mkdir()

    with pytest.raises(JobFailed) as failed:
        raster_convert(convert_args(output="sub/out.tif", driver="GTiff"), ctx)

    assert (failed.value.code, failed.value.field) == ("gdal.write_failed", "output")
    assert "/proc/" not in failed.value.message and "out.tif" in failed.value.message
    assert sorted(p.name for p in (ctx.roots[0] / "sub").iterdir()) == [".out.geogate.local.partial.tif"]
