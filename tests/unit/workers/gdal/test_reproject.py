"""Job `raster_reproject`: real warps of generated rasters, checked against pyproj/rasterio, plus its failures."""

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import rasterio
from pydantic import ValidationError
from rasterio.warp import transform_bounds

from geogate.settings import Settings
from schemas.tools.raster import RasterReprojectArgs
from workers.gdal.outputs import file_ref
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled, JobFailed
from workers.tools.raster import raster_reproject

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")  # rasterio 1.4 × affine 3

RasterFactory = Callable[..., Path]


def reproject_args(**overrides: object) -> RasterReprojectArgs:
    fields: dict[str, object] = {
        "uri": "src.tif",
        "output": "out.tif",
        "dst_crs": "EPSG:3857",
        "resampling": "bilinear",
    }
    return RasterReprojectArgs.model_validate(fields | overrides)


@pytest.mark.parametrize(
    ("dtype", "src_crs", "dst_crs"),
    [("uint8", "EPSG:4326", "EPSG:3857"), ("int16", "EPSG:3857", "EPSG:4326"), ("float32", "EPSG:32633", "EPSG:4326")],
)
def test_reprojected_bounds_agree_with_transform_bounds_of_the_source(
    make_raster: RasterFactory, ctx: JobContext, dtype: str, src_crs: str, dst_crs: str
) -> None:
    """Issue 3 acceptance: reprojected bounds agree with a pyproj/rasterio transform of the source bounds."""
    path = make_raster(dtype=dtype, crs=src_crs)
    with rasterio.open(path) as src:
        expected = transform_bounds(src.crs, dst_crs, *src.bounds, densify_pts=21)
        pixel = max(abs(expected[2] - expected[0]) / src.width, abs(expected[3] - expected[1]) / src.height)

    result = raster_reproject(reproject_args(dst_crs=dst_crs), ctx)

    with rasterio.open(result.output.path) as out:
        assert out.crs == rasterio.crs.CRS.from_user_input(dst_crs)
        assert out.dtypes[0] == dtype
        assert list(out.bounds) == pytest.approx(result.bounds)
    assert result.bounds == pytest.approx(list(expected), abs=2 * pixel)
    assert (result.output.size, len(result.output.sha256)) == (Path(result.output.path).stat().st_size, 64)


def test_reproject_to_a_resolution_gives_that_pixel_size(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(crs="EPSG:4326")

    result = raster_reproject(reproject_args(resolution=[2000.0, 2000.0]), ctx)

    with rasterio.open(result.output.path) as out:
        assert out.res == pytest.approx((2000.0, 2000.0))


def test_reproject_to_bounds_and_size_gives_exactly_that_grid(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(crs="EPSG:4326")
    bounds = [1_120_000.0, 6_300_000.0, 1_160_000.0, 6_340_000.0]

    result = raster_reproject(reproject_args(bounds=bounds, width=40, height=20), ctx)

    with rasterio.open(result.output.path) as out:
        assert (out.width, out.height) == (40, 20)
        assert list(out.bounds) == pytest.approx(bounds)


def test_reproject_keeps_values_of_a_constant_raster(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(data=np.full((32, 32), 7, dtype="int16"), dtype="int16", crs="EPSG:32633", nodata=-1)

    result = raster_reproject(reproject_args(dst_crs="EPSG:4326", resampling="nearest"), ctx)

    with rasterio.open(result.output.path) as out:
        values = out.read(1, masked=True)
    assert out.nodata == -1
    assert set(np.unique(values.compressed())) == {7}


def test_reproject_sets_the_requested_nodata(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster(dtype="float32")

    raster_reproject(reproject_args(nodata=-9999.0), ctx)

    with rasterio.open(ctx.roots[0] / "out.tif") as out:
        assert out.nodata == -9999.0


SMALL_WINDOWS = Settings.model_construct(tile_size=256)
"""Windows of 256 pixels: several rows of them even on a small raster."""


def test_cancelled_reproject_leaves_no_file_at_the_output(
    make_raster: RasterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 3 acceptance: a cancelled reproject leaves no file (nor a temporary one) in the workspace."""
    make_raster(dtype="uint8", size=(600, 300))
    calls: list[float] = []

    def cancel_after_first(progress: float, total: float | None, message: str | None) -> bool:
        calls.append(progress)
        return len(calls) > 1

    ctx = JobContext(call_id="c", roots=[tmp_path], sink=cancel_after_first, settings=SMALL_WINDOWS)

    with pytest.raises(JobCancelled):
        raster_reproject(reproject_args(resampling="nearest"), ctx)

    assert len(calls) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.tif"]


def test_reproject_reports_progress_up_to_the_total(
    make_raster: RasterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_raster(dtype="uint8", size=(600, 300))
    seen: list[tuple[float, float | None]] = []
    ctx = JobContext(
        call_id="c", roots=[tmp_path], sink=lambda p, t, m: seen.append((p, t)) is not None, settings=SMALL_WINDOWS
    )

    raster_reproject(reproject_args(resampling="nearest"), ctx)

    assert len(seen) > 1
    assert [p for p, _ in seen] == list(range(1, len(seen) + 1))
    assert seen[-1][0] == seen[-1][1]


def test_reproject_does_not_replace_an_existing_output(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster()
    (ctx.roots[0] / "out.tif").write_bytes(b"keep me")

    with pytest.raises(JobFailed) as failed:
        raster_reproject(reproject_args(), ctx)

    assert (failed.value.code, failed.value.field) == ("output.exists", "output")
    assert (ctx.roots[0] / "out.tif").read_bytes() == b"keep me"


def test_reproject_with_overwrite_replaces_the_output(make_raster: RasterFactory, ctx: JobContext) -> None:
    make_raster()
    (ctx.roots[0] / "out.tif").write_bytes(b"old")

    result = raster_reproject(reproject_args(overwrite=True), ctx)

    assert result.output.size > 3


@pytest.mark.parametrize(
    ("count", "compress", "cache_mb"),
    [(1, None, None), (3, None, None), (3, None, 1), (2, "deflate", None)],
    ids=["one-band", "three-bands", "three-bands-1MB-block-cache", "deflate"],
)
def test_the_outputs_sha256_is_that_of_the_file_whether_digested_while_written_or_read_back(
    make_raster: RasterFactory,
    ctx: JobContext,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    compress: str | None,
    cache_mb: int | None,
) -> None:
    """Uncompressed outputs are written front to back and digested on the way; GDAL's block cache flushing
    blocks early (a cache smaller than the output) must not reorder them; compressed ones are read back."""
    ctx.settings = SMALL_WINDOWS
    src = make_raster(dtype="float32", size=(700, 500), count=count)
    if compress is not None:
        with rasterio.open(src) as plain:
            data, profile = plain.read(), plain.profile
        with rasterio.open(src, "w", **(profile | {"compress": compress})) as packed:
            packed.write(data)

    with rasterio.Env(GDAL_CACHEMAX=cache_mb) if cache_mb else rasterio.Env():
        result = raster_reproject(reproject_args(resampling="nearest"), ctx)

    written = Path(result.output.path).read_bytes()
    assert result.output.sha256 == hashlib.sha256(written).hexdigest() and result.output.size == len(written)
    with rasterio.open(src) as before, rasterio.open(result.output.path) as after:
        assert after.count == count and (after.compression is not None) == (compress is not None)
        assert after.read().mean() == pytest.approx(before.read().mean(), rel=0.02)


def test_reproject_without_any_source_crs_fails_naming_src_crs(tmp_path: Path, ctx: JobContext) -> None:
    profile = {"driver": "GTiff", "width": 8, "height": 8, "count": 1, "dtype": "uint8"}
    with rasterio.open(tmp_path / "src.tif", "w", transform=rasterio.Affine(1, 0, 10, 0, -1, 50), **profile) as dst:
        dst.write(np.ones((1, 8, 8), "uint8"))

    with pytest.raises(JobFailed) as failed:
        raster_reproject(reproject_args(), ctx)

    assert (failed.value.code, failed.value.field) == ("crs.missing", "src_crs")


def test_reproject_with_src_crs_warps_a_raster_that_has_none(tmp_path: Path, ctx: JobContext) -> None:
    profile = {"driver": "GTiff", "width": 8, "height": 8, "count": 1, "dtype": "uint8"}
    with rasterio.open(tmp_path / "src.tif", "w", transform=rasterio.Affine(0.1, 0, 10, 0, -0.1, 50), **profile) as d:
        d.write(np.ones((1, 8, 8), "uint8"))

    result = raster_reproject(reproject_args(src_crs="EPSG:4326"), ctx)

    assert result.src_crs == "EPSG:4326"


@pytest.mark.parametrize("field", ["dst_crs", "src_crs"])
def test_an_unknown_crs_is_refused_naming_its_field(field: str) -> None:
    with pytest.raises(ValidationError) as invalid:
        reproject_args(**{field: "EPSG:999999"})

    assert [e["loc"] for e in invalid.value.errors()] == [(field,)]


def test_an_unknown_resampling_is_refused_listing_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as invalid:
        reproject_args(resampling="smooth")

    error = invalid.value.errors()[0]
    assert error["loc"] == ("resampling",)
    assert all(name in error["msg"] for name in ("nearest", "bilinear", "cubic", "lanczos"))


def test_resampling_names_match_rasterios() -> None:
    from rasterio.enums import Resampling as RioResampling

    from schemas.tools.raster import Resampling

    assert {r.value for r in Resampling} == set(RioResampling.__members__)


def test_width_without_height_is_refused() -> None:
    with pytest.raises(ValidationError):
        reproject_args(width=10)


@pytest.mark.parametrize("content", [b"", b"x" * 5, bytes(range(256)) * 4099], ids=["empty", "tiny", "1MB"])
def test_an_output_read_back_is_described_by_its_size_and_sha256(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(content)
    ref = file_ref(path, "GTiff")
    assert (ref.size, ref.sha256, ref.path) == (len(content), hashlib.sha256(content).hexdigest(), str(path))


@pytest.mark.parametrize(
    "dst_crs",
    [
        "IAU_2015:49900",
        'ENGCRS["site",EDATUM["d"],CS[Cartesian,2],AXIS["x",east],AXIS["y",north],LENGTHUNIT["metre",1]]',
    ],
)
def test_a_crs_with_no_transformation_from_the_source_is_refused_before_anything_is_written(
    make_raster: RasterFactory, ctx: JobContext, dst_crs: str
) -> None:
    make_raster("src.tif", crs="EPSG:32633")

    with pytest.raises(JobFailed) as failed:
        raster_reproject(reproject_args(dst_crs=dst_crs, output="new/out.tif"), ctx)

    assert (failed.value.code, failed.value.field) == ("crs.no_transformation", "dst_crs")
    assert failed.value.details == {"valid": ["EPSG:32633", "EPSG:4326"], "source_crs": "WGS 84 / UTM zone 33N"}
    assert not (ctx.roots[0] / "new").exists()
