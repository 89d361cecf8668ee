"""The bounds' errors: a `limit.<setting>` code, the argument, and a message that names the variable to raise."""

from collections.abc import Callable
from pathlib import Path

import pytest

from geogate.settings import LimitSettings, Settings
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.limits import FeatureCount, check_raster, check_result, check_zones


def ctx_with(root: Path, **limits: int) -> JobContext:
    return JobContext("c", [root], settings=Settings(redis_url="redis://unused", limits=LimitSettings(**limits)))


def test_an_output_is_counted_in_bytes_by_its_dtype(tmp_path: Path) -> None:
    """The same grid passes in uint8 and is refused in float64: 1024² × 8 bytes is past 4 MiB."""
    ctx = ctx_with(tmp_path, output_bytes=4 << 20)

    check_raster(ctx, 1024, 1024, 1, "uint8", "resolution")
    check_raster(ctx, 1024, 1024, 4, "uint8", "resolution")
    with pytest.raises(JobFailed) as failed:
        check_raster(ctx, 1024, 1024, 1, "float64", "resolution")

    assert (failed.value.code, failed.value.field) == ("limit.output_bytes", "resolution")
    assert "GEOGATE_LIMIT_OUTPUT_BYTES" in failed.value.message and not failed.value.retryable


def test_a_gdal_dtype_numpy_has_no_name_for_is_counted_as_it_is_read(tmp_path: Path) -> None:
    """rasterio reads `complex_int16` (GDAL's CInt16) into complex64: 8 bytes a pixel."""
    ctx = ctx_with(tmp_path, output_bytes=8 << 20)

    check_raster(ctx, 1024, 1024, 1, "complex_int16", "uri")
    with pytest.raises(JobFailed):
        check_raster(ctx, 1024, 1025, 1, "complex_int16", "uri")


def test_a_job_without_settings_has_the_default_bounds(tmp_path: Path) -> None:
    ctx = JobContext("c", [tmp_path])

    check_raster(ctx, 32768, 65536, 1, "uint8", "uri")  # 2 GiB exactly
    with pytest.raises(JobFailed):
        check_raster(ctx, 32768, 65537, 1, "uint8", "uri")


@pytest.mark.parametrize(
    ("check", "code", "variable"),
    [
        (lambda ctx: check_zones(ctx, 11, "zones"), "limit.zones", "GEOGATE_LIMIT_ZONES"),
        (lambda ctx: FeatureCount(ctx, "uri", "polygons").add(11), "limit.features", "GEOGATE_LIMIT_FEATURES"),
        (lambda ctx: check_result(ctx.settings, 70_000), "limit.result_bytes", "GEOGATE_LIMIT_RESULT_BYTES"),
    ],
    ids=["zones", "features", "result_bytes"],
)
def test_each_bound_names_the_variable_that_raises_it(
    tmp_path: Path, check: Callable[[JobContext], object], code: str, variable: str
) -> None:
    ctx = ctx_with(tmp_path, zones=10, features=10, result_bytes=65_536)

    with pytest.raises(JobFailed) as failed:
        check(ctx)

    assert failed.value.code == code and variable in failed.value.message


def test_features_are_counted_as_they_come_and_stop_just_past_the_bound(tmp_path: Path) -> None:
    count = FeatureCount(ctx_with(tmp_path, features=3), "uri", "polygons")

    assert [count.add() for _ in range(3)] == [1, 2, 3]
    with pytest.raises(JobFailed):
        count.add()
