"""An object-storage workspace through the real stack (MCP over HTTP, gateway, Redis, a Celery worker, GDAL): the
only workspace root is `s3://geogate-e2e/projects/demo` on moto's standalone S3 server, started here on a free port.
A raster is converted and reprojected from and to the bucket, a failed call leaves no object, a path outside the
prefix is refused, and the store's secret appears nowhere: not in a reply, the worker's log or anything on Redis."""

import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
import rasterio
import redis
from affine import Affine
from mcp import Client
from moto.server import ThreadedMotoServer
from rasterio.enums import Resampling
from rasterio.warp import reproject

from tests.integration.conftest import start_gateway, start_worker, stop
from tests.integration.test_remote_e2e import _everything_on
from tests.support import free_port, justify, redis_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

BUCKET, PREFIX = "geogate-e2e", "projects/demo"
ROOT = f"s3://{BUCKET}/{PREFIX}"
SOURCE = Affine(0.001, 0, 8, 0, -0.001, 46)
KEY_ID, SECRET = "AKIDE2EGEOGATE", "e2e-Secret-7c1d9a4f2b8e6d3c5a0f"


@dataclass
class ObjectStack:
    url: str
    redis_url: str
    s3: Any
    worker_log: Path
    data: np.ndarray


def _upload_dem(s3: Any, folder: Path) -> np.ndarray:
    data = np.random.default_rng(7).normal(800, 90, (1, 300, 400)).astype("float32")
    profile = {"driver": "GTiff", "width": 400, "height": 300, "count": 1, "dtype": "float32", "tiled": True}
    with rasterio.open(folder / "dem.tif", "w", crs="EPSG:4326", transform=SOURCE, **profile) as dst:
        dst.write(data)
    s3.upload_file(str(folder / "dem.tif"), BUCKET, f"{PREFIX}/dem.tif")
    return data


@pytest.fixture(scope="module")
def object_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStack]:
    workdir = tmp_path_factory.mktemp("objects")
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    endpoint = "http://{}:{}".format(*moto.get_host_and_port())
    secrets = workdir / "s3.secrets"
    secrets.write_text(f"access_key_id={KEY_ID}\nsecret_access_key={SECRET}\n")
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    s3.create_bucket(Bucket=BUCKET)
    data = _upload_dem(s3, workdir)
    port, log = free_port(), workdir / "worker.log"
    with redis_server(workdir) as redis_url, log.open("wb") as sink:
        env = {**os.environ, "REDIS_URL": redis_url, "GEOGATE_WORKSPACES": ROOT, "GEOGATE_S3_ENDPOINT_URL": endpoint}
        env["GEOGATE_S3_SECRETS_FILE"] = str(secrets)
        worker = start_worker(env, concurrency=1, log=sink, level="INFO")
        gateway = start_gateway(env, port)
        try:
            yield ObjectStack(f"http://127.0.0.1:{port}/mcp", redis_url, s3, log, data)
        finally:
            stop(gateway)
            stop(worker)
            moto.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(stack: ObjectStack, name: str, arguments: dict[str, Any]) -> Any:
    """One call through the SDK's client, which answers the preflight gate by sampling."""
    async with Client(stack.url, sampling_callback=justify) as session:
        return await session.call_tool(name, arguments)


def _object(stack: ObjectStack, key: str) -> bytes:
    return stack.s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/{key}")["Body"].read()


def _keys(stack: ObjectStack) -> set[str]:
    return {item["Key"] for item in stack.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


async def test_a_raster_is_converted_and_reprojected_from_and_to_the_bucket(object_stack: ObjectStack) -> None:
    cog = {"uri": f"{ROOT}/dem.tif", "output": f"{ROOT}/out/dem-cog.tif", "driver": "COG", "compression": "deflate"}
    warp = {"uri": "out/dem-cog.tif", "output": "out/dem-utm.tif", "dst_crs": "EPSG:32632", "resampling": "bilinear"}

    converted = await call(object_stack, "raster_convert", cog)
    warped = await call(object_stack, "raster_reproject", warp)

    assert not converted.is_error and not warped.is_error, (converted.content, warped.content)
    assert converted.structured_content["output"]["uri"] == f"{ROOT}/out/dem-cog.tif"
    with rasterio.open(io.BytesIO(_object(object_stack, "out/dem-cog.tif"))) as out:
        assert (out.driver, out.compression.value.lower()) == ("GTiff", "deflate")
        np.testing.assert_array_equal(out.read(), object_stack.data)
    with rasterio.open(io.BytesIO(_object(object_stack, "out/dem-utm.tif"))) as out:
        assert out.crs.to_epsg() == 32632
        assert (out.width, out.height) == (warped.structured_content["width"], warped.structured_content["height"])
        np.testing.assert_allclose(out.read(), _reference(object_stack.data, out), atol=1e-3)


def _reference(data: np.ndarray, out: Any) -> np.ndarray:
    """`data` warped by rasterio in this process onto `out`'s grid, as the tool was asked to."""
    expected = np.zeros((1, out.height, out.width), dtype="float32")
    reproject(
        data, expected, src_transform=SOURCE, src_crs="EPSG:4326", dst_transform=out.transform, dst_crs=out.crs,
        resampling=Resampling.bilinear,
    )  # fmt: skip
    return expected


async def test_a_failed_call_leaves_no_object_and_no_upload(object_stack: ObjectStack) -> None:
    before = _keys(object_stack)
    png = {"uri": "dem.tif", "output": "out/dem.png", "driver": "PNG"}  # PNG holds no float32: refused after staging

    reply = await call(object_stack, "raster_convert", png)

    assert reply.is_error and reply.structured_content["error"]["code"] == "driver.unknown", reply.content
    assert _keys(object_stack) == before
    assert not object_stack.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")


@pytest.mark.parametrize(
    "uri", [f"s3://{BUCKET}/projects/other/dem.tif", f"s3://elsewhere/{PREFIX}/dem.tif", f"{ROOT}/../x/dem.tif"]
)
async def test_a_path_outside_the_prefix_is_refused(object_stack: ObjectStack, uri: str) -> None:
    object_stack.s3.put_object(Bucket=BUCKET, Key="projects/other/dem.tif", Body=_object(object_stack, "dem.tif"))

    reply = await call(object_stack, "raster_info", {"uri": uri})

    error = reply.structured_content["error"]
    assert reply.is_error and (error["code"], error["field"]) == ("path.outside_workspace", "uri"), error


async def test_the_secret_is_in_no_reply_no_log_and_nowhere_on_redis(object_stack: ObjectStack) -> None:
    replies = [
        await call(object_stack, "raster_info", {"uri": "dem.tif"}),
        await call(object_stack, "raster_info", {"uri": "missing.tif"}),
    ]

    assert replies[0].structured_content["path"] == f"{ROOT}/dem.tif"
    assert replies[1].structured_content["error"]["code"] == "path.not_found"
    assert SECRET not in str([r.model_dump() for r in replies])
    log = object_stack.worker_log.read_bytes()
    assert b"ready" in log and SECRET.encode() not in log
    assert SECRET.encode() not in _everything_on(redis.Redis.from_url(object_stack.redis_url))


async def test_the_catalog_resource_lists_the_bucket(object_stack: ObjectStack) -> None:
    async with Client(object_stack.url) as session:
        read = await session.read_resource("catalog://workspace/raster")

    scan = json.loads(read.contents[0].text)
    listed = {entry["path"]: entry for entry in scan["entries"]}
    assert listed[f"{ROOT}/dem.tif"]["driver"] == "GTiff" and scan["roots"] == [ROOT]
