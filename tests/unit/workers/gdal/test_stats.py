"""Job `raster_stats`: figures agree with numpy on the same array, nodata-aware."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from schemas.tools.raster import RasterStatsArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster import raster_stats

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3

RasterFactory = Callable[..., Path]


def random_band(dtype: str, shape: tuple[int, int] = (300, 700), seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.normal(100.0, 25.0, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -3000), min(info.max, 3000), shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize(("dtype", "nodata"), [("uint8", 0), ("int16", -9999), ("float32", -1.0)])
def test_stats_agree_with_numpy_on_the_valid_pixels(
    make_raster: RasterFactory, ctx: JobContext, dtype: str, nodata: float
) -> None:
    """Issue 3 acceptance: stats agree with numpy on the same array, nodata excluded."""
    data = random_band(dtype)
    data[:40, :] = nodata
    make_raster(data=data, dtype=dtype, nodata=nodata, crs="EPSG:32633")
    valid = data[data != nodata].astype(np.float64)

    result = raster_stats(RasterStatsArgs(uri="src.tif", percentiles=[10.0, 90.0]), ctx)

    stats = result.band_stats[0]
    assert (stats.valid_count, stats.nodata_count, result.total_pixels) == (
        valid.size,
        data.size - valid.size,
        data.size,
    )
    assert (stats.min, stats.max) == (valid.min(), valid.max())
    assert stats.mean == pytest.approx(valid.mean(), rel=1e-9)
    assert stats.std == pytest.approx(valid.std(), rel=1e-9)
    assert stats.median == pytest.approx(np.median(valid))
    assert stats.percentiles == pytest.approx({"10.0": np.percentile(valid, 10), "90.0": np.percentile(valid, 90)})


def test_nan_pixels_are_not_counted_as_valid(make_raster: RasterFactory, ctx: JobContext) -> None:
    data = random_band("float32", (50, 50))
    data[0, :] = np.nan
    make_raster(data=data, dtype="float32")

    stats = raster_stats(RasterStatsArgs(uri="src.tif"), ctx).band_stats[0]

    assert stats.valid_count == 50 * 49
    assert stats.mean == pytest.approx(np.nanmean(data.astype(np.float64)))


def test_histogram_counts_every_valid_pixel_into_the_requested_bins(
    make_raster: RasterFactory, ctx: JobContext
) -> None:
    data = random_band("int16")
    make_raster(data=data, dtype="int16")
    expected, _ = np.histogram(data.astype(np.float64), bins=16)

    stats = raster_stats(RasterStatsArgs(uri="src.tif", include_histogram=True, histogram_bins=16), ctx).band_stats[0]

    assert [b.count for b in stats.histogram] == expected.tolist()
    assert stats.histogram[0].min_value == data.min()


def test_stats_of_selected_bands_only(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(count=3, dtype="uint8")

    result = raster_stats(RasterStatsArgs(uri="src.tif", bands=[3, 1]), ctx)

    assert [s.band for s in result.band_stats] == [3, 1]


def test_an_out_of_range_band_fails_naming_bands(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(count=2)

    with pytest.raises(JobFailed) as failed:
        raster_stats(RasterStatsArgs(uri="src.tif", bands=[3]), ctx)

    assert (failed.value.code, failed.value.field) == ("band.out_of_range", "bands")


def test_an_all_nodata_band_reports_no_figures(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(data=np.zeros((20, 20), "uint8"), dtype="uint8", nodata=0)

    result = raster_stats(RasterStatsArgs(uri="src.tif"), ctx)

    assert (result.band_stats[0].valid_count, result.band_stats[0].mean) == (0, None)
    assert "no valid pixels" in result.summary()


def test_sampling_keeps_full_counts_and_close_figures(make_raster: RasterFactory, ctx: JobContext) -> None:
    data = random_band("float32", (400, 400))
    make_raster(data=data, dtype="float32")

    result = raster_stats(RasterStatsArgs(uri="src.tif", sample_size=20_000), ctx)

    stats = result.band_stats[0]
    assert result.sampled
    assert stats.valid_count == data.size
    assert stats.mean == pytest.approx(float(data.mean()), abs=1.0)


def test_a_truncated_tiff_fails_as_corrupt_when_pixels_are_read(make_raster: RasterFactory, ctx: JobContext) -> None:
    path = make_raster(size=(512, 512))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    with pytest.raises(JobFailed) as failed:
        raster_stats(RasterStatsArgs(uri="src.tif"), ctx)

    assert (failed.value.code, failed.value.field) == ("gdal.corrupt", "uri")


def test_gdal_mcp_nested_params_are_accepted() -> None:
    args = RasterStatsArgs.model_validate({"uri": "a.tif", "params": {"bands": [2], "include_histogram": True}})

    assert (args.bands, args.include_histogram) == ([2], True)


def test_percentiles_outside_0_to_100_are_refused() -> None:
    with pytest.raises(ValidationError):
        RasterStatsArgs(uri="a.tif", percentiles=[101.0])
