"""Object-storage workspaces (`s3://bucket/prefix` roots) against a real S3-compatible server: moto's standalone
server on a free port. The jobs run as the worker runs them (confined, with their object roots mounted)."""

import hashlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pyogrio
import pytest
import rasterio
from affine import Affine
from moto.server import ThreadedMotoServer

from geogate.objects import (
    ObjectRoot,
    check_workspaces,
    object_store_settings,
    resolved_workspaces,
    split_workspaces,
)
from geogate.settings import Settings, SettingsError
from schemas.tools.catalog import CatalogScanArgs, DatasetFormatArgs
from schemas.tools.previews import CogValidateArgs, RasterPreviewArgs, VectorPreviewArgs
from schemas.tools.raster import RasterConvertArgs, RasterInfoArgs, RasterReprojectArgs, RasterStatsArgs
from schemas.tools.raster_ops import RasterCalcArgs, RasterClipArgs, RasterMosaicArgs, RasterTerrainArgs
from schemas.tools.vector import VectorConvertArgs
from workers.gdal import convert_tiles
from workers.jobkit.confine import confinement
from workers.jobkit.context import Fence, JobContext
from workers.jobkit.errors import JobCancelled, JobFailed, JobSuperseded
from workers.jobs import object_roots
from workers.tools.catalog import catalog_scan, dataset_format
from workers.tools.previews import cog_validate, raster_preview, vector_preview
from workers.tools.raster import raster_convert, raster_info, raster_reproject, raster_stats
from workers.tools.raster_ops import raster_calc, raster_clip, raster_mosaic, raster_terrain
from workers.tools.vector import vector_convert

pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")

BUCKET, PREFIX = "geogate-test", "work/area"
ROOT = f"s3://{BUCKET}/{PREFIX}"
SECRET = "s3cr3t-Geogate-9f8e7d6c5b4a39281706"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    yield f"http://{host}:{port}"
    moto.stop()


@pytest.fixture
def s3(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    env = {"ENDPOINT_URL": server, "ACCESS_KEY_ID": "AKIDGEOGATETEST", "SECRET_ACCESS_KEY": SECRET}
    for name, value in env.items():
        monkeypatch.setenv(f"GEOGATE_S3_{name}", value)
    object_store_settings.cache_clear()
    client = boto3.client(
        "s3",
        endpoint_url=server,
        aws_access_key_id="AKIDGEOGATETEST",
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    yield client
    for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)
    object_store_settings.cache_clear()


@pytest.fixture
def ctx(tmp_path: Path, s3: Any) -> JobContext:
    local = tmp_path / "local"
    local.mkdir()
    settings = Settings.defaults().model_copy(update={"workspaces": f"{ROOT}:{local}"})
    return JobContext(call_id="test-call", roots=settings.workspace_roots(), settings=settings)


def put_raster(s3: Any, key: str, folder: Path, size: tuple[int, int] = (120, 200)) -> np.ndarray:
    data = (np.arange(size[0] * size[1], dtype="float32").reshape(1, *size) % 251) * 0.5
    path = folder / "upload.tif"
    profile = {"driver": "GTiff", "width": size[1], "height": size[0], "count": 1, "dtype": "float32"}
    with rasterio.open(path, "w", crs="EPSG:4326", transform=Affine(0.01, 0, 10, 0, -0.01, 47), **profile) as dst:
        dst.write(data)
    s3.upload_file(str(path), BUCKET, f"{PREFIX}/{key}")
    return data


def get(s3: Any, key: str) -> bytes:
    return s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/{key}")["Body"].read()


def keys(s3: Any) -> list[str]:
    return sorted(item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def test_workspaces_split_at_colons_but_not_at_an_s3_scheme() -> None:
    entries = split_workspaces(f"/data:{ROOT}/:./here")

    assert entries == ["/data", ObjectRoot(BUCKET, PREFIX), "./here"]
    assert Settings.defaults().model_copy(update={"workspaces": f"/data:{ROOT}"}).workspace_roots() == [Path("/data")]
    assert resolved_workspaces(f"/data:{ROOT}/:/data/.") == ["/data", ROOT]  # what `geogate dev` hands its workers
    with pytest.raises(ValueError, match="not a usable"):
        split_workspaces(f"s3://{BUCKET}/a/../b")


def test_a_worker_refuses_to_start_on_an_unusable_root_or_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEOGATE_S3_PART_MB", "2")
    object_store_settings.cache_clear()

    with pytest.raises(SettingsError, match="GEOGATE_WORKSPACES: 's3://Bad_Bucket/x'"):
        check_workspaces("/data:s3://Bad_Bucket/x")
    with pytest.raises(SettingsError, match="GEOGATE_S3_PART_MB: Input should be greater than or equal to 5"):
        check_workspaces(ROOT)
    check_workspaces("/data")  # no object root: the store's settings are not read
    object_store_settings.cache_clear()


def test_a_raster_is_converted_from_the_bucket_into_a_cog_in_the_bucket(
    s3: Any, ctx: JobContext, tmp_path: Path
) -> None:
    data = put_raster(s3, "dem.tif", tmp_path)

    args = {"uri": f"{ROOT}/dem.tif", "output": f"{ROOT}/out/dem-cog.tif", "driver": "COG", "compression": "deflate"}
    result = raster_convert(RasterConvertArgs.model_validate(args), ctx)

    body = get(s3, "out/dem-cog.tif")
    head = s3.head_object(Bucket=BUCKET, Key=f"{PREFIX}/out/dem-cog.tif")
    assert result.output.uri == f"{ROOT}/out/dem-cog.tif" and result.driver == "GTiff"
    assert result.output.sha256 == hashlib.sha256(body).hexdigest() == head["Metadata"]["sha256"]
    with rasterio.open(io.BytesIO(body)) as out:
        assert out.compression.value.lower() == "deflate"
        np.testing.assert_array_equal(out.read(), data)
    assert [(i.path, i.role) for i in ctx.inputs] == [(f"{ROOT}/dem.tif", "uri")]
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("geogate-s3-*/geogate-test"))  # mirror removed


def test_a_relative_path_means_the_first_root_and_info_names_the_object(
    s3: Any, ctx: JobContext, tmp_path: Path
) -> None:
    put_raster(s3, "dem.tif", tmp_path)

    info = raster_info(RasterInfoArgs(uri="dem.tif"), ctx)

    assert (info.width, info.height, info.path) == (200, 120, f"{ROOT}/dem.tif")


def test_a_raster_is_reprojected_and_clipped_from_and_to_the_bucket(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    data = put_raster(s3, "dem.tif", tmp_path)

    warped = raster_reproject(
        RasterReprojectArgs(uri="dem.tif", output="utm.tif", dst_crs="EPSG:32632", resampling="nearest"), ctx
    )
    clip = RasterClipArgs.model_validate(
        {"uri": "dem.tif", "output": f"{ROOT}/clip.tif", "bounds": [10.5, 46, 11, 46.5]}
    )
    clipped = raster_clip(clip, ctx)

    with rasterio.open(io.BytesIO(get(s3, "utm.tif"))) as out:
        assert out.crs.to_epsg() == 32632 and (out.width, out.height) == (warped.width, warped.height)
    with rasterio.open(io.BytesIO(get(s3, "clip.tif"))) as out:
        np.testing.assert_array_equal(out.read(), data[:, 50:100, 50:100])
    assert clipped.output.uri == f"{ROOT}/clip.tif"


def test_a_shapefile_is_written_to_the_bucket_with_its_sidecars(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    local = tmp_path / "points.gpkg"
    gdf = {"geometry": [f"POINT ({x} {x})" for x in range(5)], "n": list(range(5))}
    pyogrio.write_dataframe(_frame(gdf), local, layer="points")
    s3.upload_file(str(local), BUCKET, f"{PREFIX}/in/points.gpkg")

    vector_convert(VectorConvertArgs(uri=f"{ROOT}/in/points.gpkg", output="shp/points.shp"), ctx)

    assert {k.rsplit("/", 1)[1] for k in keys(s3) if "/shp/" in k} >= {"points.shp", "points.shx", "points.dbf"}
    shp = tmp_path / "back"
    shp.mkdir()
    for name in ("points.shp", "points.shx", "points.dbf", "points.prj"):
        (shp / name).write_bytes(get(s3, f"shp/{name}"))
    assert list(pyogrio.read_dataframe(shp / "points.shp")["n"]) == list(range(5))


def _frame(columns: dict[str, list[Any]]) -> Any:
    import geopandas
    import shapely

    return geopandas.GeoDataFrame({"n": columns["n"]}, geometry=shapely.from_wkt(columns["geometry"]), crs="EPSG:4326")


@pytest.mark.parametrize(
    "uri",
    [
        "s3://other-bucket/work/area/dem.tif",
        f"s3://{BUCKET}/work/areaX/dem.tif",
        f"s3://{BUCKET}/work/dem.tif",
        f"{ROOT}/../dem.tif",
        "/etc/passwd",
    ],
)
def test_a_path_outside_the_prefix_is_refused(s3: Any, ctx: JobContext, tmp_path: Path, uri: str) -> None:
    put_raster(s3, "dem.tif", tmp_path)
    s3.upload_file(str(tmp_path / "upload.tif"), BUCKET, "work/dem.tif")

    with pytest.raises(JobFailed) as failed:
        raster_info(RasterInfoArgs(uri=uri), ctx)

    assert (failed.value.code, failed.value.field) == ("path.outside_workspace", "uri")


def test_an_existing_object_is_kept_without_overwrite(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    put_raster(s3, "dem.tif", tmp_path)
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/out.tif", Body=b"mine")

    with pytest.raises(JobFailed) as failed:
        raster_convert(RasterConvertArgs(uri="dem.tif", output="out.tif"), ctx)
    replaced = raster_convert(RasterConvertArgs(uri="dem.tif", output="out.tif", overwrite=True), ctx)

    assert (failed.value.code, failed.value.field) == ("output.exists", "output")
    assert replaced.output.sha256 == hashlib.sha256(get(s3, "out.tif")).hexdigest()


def test_an_object_that_appears_during_the_call_is_not_replaced(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    put_raster(s3, "dem.tif", tmp_path)
    reports = 0

    def sink(progress: float, total: float | None, message: str | None) -> bool:
        nonlocal reports
        reports += 1
        if reports == 1:
            s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/out.tif", Body=b"theirs")
        return False

    ctx.sink = sink
    with pytest.raises(JobFailed) as failed:
        raster_convert(RasterConvertArgs(uri="dem.tif", output="out.tif"), ctx)

    assert failed.value.code == "output.exists"
    assert get(s3, "out.tif") == b"theirs"
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_a_cancelled_call_leaves_no_object_and_no_upload(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    put_raster(s3, "dem.tif", tmp_path)
    ctx.sink = lambda progress, total, message: message == "converted"

    with pytest.raises(JobCancelled):
        raster_convert(RasterConvertArgs(uri="dem.tif", output="out.tif", driver="COG"), ctx)

    assert keys(s3) == [f"{PREFIX}/dem.tif"]
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_a_refused_credential_fails_with_the_store_code_and_no_secret(
    s3: Any, ctx: JobContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put_raster(s3, "dem.tif", tmp_path)
    monkeypatch.setenv("GEOGATE_S3_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    object_store_settings.cache_clear()

    with pytest.raises(JobFailed) as failed:
        raster_info(RasterInfoArgs(uri="dem.tif"), ctx)

    assert (failed.value.code, failed.value.retryable) == ("storage.failed", True)
    assert SECRET not in str(failed.value) and "AKIDGEOGATETEST" not in str(failed.value)


def test_a_geotiff_is_read_by_range_requests_and_other_files_are_fetched(
    s3: Any, ctx: JobContext, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    put_raster(s3, "dem.tif", tmp_path, size=(1024, 1024))
    caplog.set_level("INFO", logger="werkzeug")

    info = raster_info(RasterInfoArgs(uri="dem.tif"), ctx)

    gets = [r.getMessage() for r in caplog.records if "GET /geogate-test/work/area/dem.tif" in r.getMessage()]
    assert info.width == 1024 and gets and all('" 206 ' in line for line in gets), gets
    assert [(i.path, i.sha256, i.size) for i in ctx.inputs] == [(f"{ROOT}/dem.tif", None, len(get(s3, "dem.tif")))]


def test_catalog_scan_lists_the_bucket_with_details_and_dataset_format_reads_an_object(
    s3: Any, ctx: JobContext, tmp_path: Path
) -> None:
    put_raster(s3, "rasters/dem.tif", tmp_path)
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/notes.txt", Body=b"not a dataset")
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/.hidden/x.tif", Body=b"hidden")
    s3.put_object(Bucket=BUCKET, Key="work/elsewhere.tif", Body=b"outside the prefix")

    scan = catalog_scan(CatalogScanArgs(details=True), ctx)
    sub = catalog_scan(CatalogScanArgs(subpath=f"{ROOT}/rasters"), ctx)
    found = dataset_format(DatasetFormatArgs(uri="rasters/dem.tif"), ctx)

    entry = next(e for e in scan.entries if e.path.startswith("s3://"))
    assert [e.relative for e in scan.entries if e.path.startswith("s3://")] == ["rasters/dem.tif"]
    assert (entry.path, entry.driver, entry.crs, entry.size) == (
        f"{ROOT}/rasters/dem.tif",
        "GTiff",
        "EPSG:4326",
        len(get(s3, "rasters/dem.tif")),
    )
    assert ROOT in scan.roots and [e.relative for e in sub.entries] == ["rasters/dem.tif"]
    assert (found.path, found.kind, found.width) == (f"{ROOT}/rasters/dem.tif", "raster", 200)


def test_previews_stats_and_cog_validation_read_objects(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    data = put_raster(s3, "dem.tif", tmp_path)
    local = tmp_path / "points.gpkg"
    pyogrio.write_dataframe(_frame({"geometry": ["POINT (1 1)", "POINT (2 3)"], "n": [1, 2]}), local, layer="points")
    s3.upload_file(str(local), BUCKET, f"{PREFIX}/points.gpkg")

    raster = raster_preview(RasterPreviewArgs(uri="dem.tif", max_size=64), ctx)
    vector = vector_preview(VectorPreviewArgs(uri=f"{ROOT}/points.gpkg", max_size=64), ctx)
    stats = raster_stats(RasterStatsArgs(uri="dem.tif"), ctx)
    cog = cog_validate(CogValidateArgs(uri="dem.tif"), ctx)

    assert (raster.path, raster.source_size, raster.image_bytes > 0) == (f"{ROOT}/dem.tif", [200, 120], True)
    assert (vector.path, vector.feature_count) == (f"{ROOT}/points.gpkg", 2)
    assert stats.band_stats[0].max == pytest.approx(float(data.max()))
    assert (cog.path, cog.width, cog.height) == (f"{ROOT}/dem.tif", 200, 120)


def test_a_call_on_the_bucket_large_enough_for_tiles_is_planned_with_its_objects_named_by_uri(
    s3: Any, ctx: JobContext, tmp_path: Path
) -> None:
    """Tiles run in jobs of their own, each with its own mirror: the plan names the source and the staging file by
    their `s3://` URIs (`tests/unit/workers/gdal/test_tiled_objects.py` runs such calls through)."""
    put_raster(s3, "dem.tif", tmp_path, size=(600, 700))
    assert ctx.settings is not None
    ctx.settings = ctx.settings.model_copy(update={"tile_min_pixels": 65_536, "tile_size": 256})
    (ctx.roots[0] / "dem.tif").write_bytes(get(s3, "dem.tif"))  # the same raster in the folder root

    with object_roots(ctx), confinement(ctx.roots):
        on_bucket = convert_tiles.plan(RasterConvertArgs(uri=f"{ROOT}/dem.tif", output="a.tif", tiled=True), ctx)
    local = str(ctx.roots[0])
    with object_roots(ctx), confinement(ctx.roots):
        in_folder = convert_tiles.plan(RasterConvertArgs(uri=f"{local}/dem.tif", output=f"{local}/b.tif"), ctx)

    assert on_bucket is not None and in_folder is not None and len(on_bucket.windows) == len(in_folder.windows) > 1
    assert on_bucket.shared["source"] == f"{ROOT}/dem.tif"
    assert str(on_bucket.shared["staging"]).startswith(f"{ROOT}/.geogate/tiles/")
    assert keys(s3) == [f"{PREFIX}/dem.tif"]  # the planner puts nothing: the tiles put their parts


def test_an_attempt_superseded_before_the_completion_leaves_no_object(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    put_raster(s3, "dem.tif", tmp_path)
    checks = iter([True, True])  # current at the start and at the local rename; superseded after the parts
    ctx.fence = Fence("test-call", "a1", lambda: next(checks, False))

    with pytest.raises(JobSuperseded):
        raster_convert(RasterConvertArgs(uri="dem.tif", output="out.tif"), ctx)

    assert keys(s3) == [f"{PREFIX}/dem.tif"]
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_tools_that_read_their_output_back_find_it_in_the_mirror(s3: Any, ctx: JobContext, tmp_path: Path) -> None:
    data = put_raster(s3, "dem.tif", tmp_path)

    calc = raster_calc(RasterCalcArgs(inputs={"a": "dem.tif"}, expression="a * 2", output="twice.tif"), ctx)
    terrain = raster_terrain(RasterTerrainArgs(uri="dem.tif", output="slope.tif", product="slope"), ctx)
    mosaic = raster_mosaic(RasterMosaicArgs(inputs=["dem.tif"], output="mosaic.tif", resampling="nearest"), ctx)

    with rasterio.open(io.BytesIO(get(s3, "twice.tif"))) as out:
        np.testing.assert_allclose(out.read(), data * 2)
    assert (calc.width, terrain.width, mosaic.width) == (200, 200, 200)
    assert {calc.output.uri, terrain.output.uri, mosaic.output.uri} <= {
        f"{ROOT}/{k.rsplit('/', 1)[1]}" for k in keys(s3)
    }
