"""`stac_search` and `stac_composite` through the MCP SDK client and the real stack (gateway, Redis, a Celery worker
of two processes) against a real STAC API: stac-fastapi on pgstac (a throwaway PostgreSQL cluster) over the
Sentinel-2-like fixture, whose COGs a range server serves. A found asset is read by `raster_info` through
GEOGATE_REMOTE_HOSTS, the ranges counted. Search → composite over an area crossing the three tiles → zonal
statistics → preview, the composite equal to the reference the unit tests compute (the fixture's files warped and
reduced with NumPy), read in ranges; a grid past the tiling threshold runs as tiles, equal to its reference too; a
cancelled composite leaves nothing in the workspace."""

import hashlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import boto3
import geopandas
import numpy as np
import pytest
import rasterio
import redis
import shapely
from mcp import Client, MCPError
from moto.server import ThreadedMotoServer
from rasterio.windows import Window
from rasterio.windows import bounds as window_bounds

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from tests.integration.conftest import start_gateway, start_worker, stop
from tests.integration.test_gdal_e2e import event_types, partials, started_worker_pid
from tests.stac.catalog import SentinelCatalog, sentinel_catalog
from tests.stac.scenes import COLLECTION, SIZE
from tests.stac.servers import Flaky, flaky_proxy
from tests.support import free_port, justify, redis_server, wait_for_log
from tests.unit.workers.stac.test_composite import AREA as THREE_TILES
from tests.unit.workers.stac.test_composite import CLOUDS, reference
from tests.unit.workers.stac.test_series import ZONES as SERIES_ZONES
from tests.unit.workers.stac.test_series import expected as expected_zone

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

AREA = (16.33, 46.45, 16.42, 46.55)
"""Crosses tiles 0 and 2 of the fixture, not tile 1."""
BUCKET, PREFIX = "stac-e2e", "composites"
"""The stack's second workspace root, `s3://BUCKET/PREFIX`, on moto's server."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class StacStack:
    url: str
    catalog: SentinelCatalog
    flaky: Flaky
    workspace: Path
    store: EventStore
    s3: Any


@pytest.fixture(scope="module")
def stac_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StacStack]:
    workdir = tmp_path_factory.mktemp("stac_e2e")
    (workdir / "workspace").mkdir()
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    endpoint = "http://{}:{}".format(*moto.get_host_and_port())
    (workdir / "s3.secrets").write_text("access_key_id=AKIDSTACE2E\nsecret_access_key=stac-e2e-secret\n")
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="AKIDSTACE2E",
                      aws_secret_access_key="stac-e2e-secret", region_name="us-east-1")  # fmt: skip
    s3.create_bucket(Bucket=BUCKET)
    with (
        sentinel_catalog(workdir) as catalog,
        flaky_proxy(catalog.api, failures=0) as flaky,
        redis_server(workdir) as r,
    ):
        env = {
            **os.environ,
            "REDIS_URL": r,
            "GEOGATE_WORKSPACES": f"{workdir / 'workspace'}:s3://{BUCKET}/{PREFIX}",
            "GEOGATE_S3_ENDPOINT_URL": endpoint,
            "GEOGATE_S3_SECRETS_FILE": str(workdir / "s3.secrets"),
            "GEOGATE_TOOLSETS": "core,raster,analysis,previews,stac",
            "GEOGATE_STAC_CATALOGS": f"{catalog.api.removeprefix('http://')},{flaky.authority}",
            "GEOGATE_STAC_BACKOFF_S": "0.05",
            "GEOGATE_REMOTE_HOSTS": catalog.cogs.authority,
            "GEOGATE_TILE_MIN_PIXELS": "100000",  # a 40 m composite of THREE_TILES (30,030 pixels) runs whole
            "GEOGATE_TILE_SIZE": "256",  # a 20 m one (119,730) as 2 × 2 tiles
            "GEOGATE_VISIBILITY_TIMEOUT_S": "30",  # a killed worker process's call is delivered again soon
        }
        worker = start_worker(env, concurrency=2)
        gateway = start_gateway(env, port)
        store = EventStore(redis.Redis.from_url(r), Keys("geogate"))
        try:
            yield StacStack(f"http://127.0.0.1:{port}/mcp", catalog, flaky, workdir / "workspace", store, s3)
        finally:
            stop(gateway)
            stop(worker)
            moto.stop()


async def test_a_cloud_filtered_search_finds_items_whose_asset_raster_info_reads_by_ranges(
    stac_stack: StacStack,
) -> None:
    catalog = stac_stack.catalog
    search = {
        "catalog": catalog.api,
        "collections": [COLLECTION],
        "bbox": list(AREA),
        "datetime": "2024-06-01T00:00:00Z/2024-06-30T23:59:59Z",
        "filter": "eo:cloud_cover < 40",
        "sortby": ["properties.datetime"],
    }
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        found = await client.call_tool("stac_search", search)
        assert not found.is_error, found.content
        href = found.structured_content["items"][0]["assets"]["B04"]["href"]
        info = await client.call_tool("raster_info", {"uri": href})

    box = shapely.box(*AREA)
    expected = sorted(
        (s.item["properties"]["datetime"], s.id)
        for s in catalog.scenes
        if s.footprint.intersects(box) and s.cloud_cover < 40
    )
    assert [i["id"] for i in found.structured_content["items"]] == [scene_id for _, scene_id in expected]
    assert found.structured_content["unreadable_hosts"] == []
    assert not info.is_error, info.content
    assert (info.structured_content["width"], info.structured_content["height"]) == (SIZE, SIZE)
    path = href.removeprefix(catalog.cogs.url)
    ranges = [(start, end) for asked, start, end in catalog.cogs.ranges if asked == path]
    size = len((catalog.cogs_root / path.lstrip("/")).read_bytes())
    assert ranges and sum(end - start + 1 for start, end in ranges) < size


async def test_a_catalog_answering_503_twice_still_answers(stac_stack: StacStack) -> None:
    stac_stack.flaky.failures_left = 2
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        found = await client.call_tool("stac_search", {"catalog": stac_stack.flaky.url, "limit": 2})

    assert not found.is_error, found.content
    assert (found.structured_content["retries"], len(found.structured_content["items"])) == (2, 2)
    assert len(stac_stack.flaky.failed) == 2


async def test_a_catalog_off_the_list_is_refused_naming_the_setting(stac_stack: StacStack) -> None:
    with flaky_proxy(stac_stack.catalog.api, failures=0) as unlisted:
        async with Client(stac_stack.url, sampling_callback=justify) as client:
            refused = await client.call_tool("stac_search", {"catalog": unlisted.url})

    error = refused.structured_content["error"]
    assert refused.is_error and (error["code"], error["field"]) == ("stac.not_allowed", "catalog")
    assert "GEOGATE_STAC_CATALOGS" in error["message"]
    assert unlisted.passed == unlisted.failed == []


def call_of_any(store: EventStore, output: str) -> str | None:
    """The id of the newest composite writing `output` (from the log)."""
    for stored in reversed(store.read("calls", count=None)):
        data = stored.event.data
        if stored.event.type == "tool.requested" and data.tool == "stac_composite" and data.args["output"] == output:
            return data.call_id
    return None


def call_of(store: EventStore, output: str) -> str | None:
    """The id of the newest composite writing `output`, once it has ended."""
    call_id = call_of_any(store, output)
    state = store.call_state(call_id) if call_id is not None else None
    return call_id if state is not None and state.terminal else None


def search_args(catalog: SentinelCatalog) -> dict:
    return {
        "catalog": catalog.api,
        "collections": [COLLECTION],
        "bbox": list(THREE_TILES),
        "sortby": ["properties.datetime"],
    }


def write_zones(path: Path, composite: Path) -> list[tuple[int, int, int, int]]:
    """Two squares on whole pixels of the composite's grid (so every pixel they cover counts whole); their windows
    as (column, row, width, height)."""
    windows = [(10, 12, 30, 25), (70, 120, 40, 40)]
    with rasterio.open(composite) as src:
        shapes = [shapely.box(*window_bounds(Window(*w), src.transform)) for w in windows]
        crs = src.crs
    geopandas.GeoDataFrame({"name": ["a", "b"]}, geometry=shapes, crs=crs).to_file(path, driver="GPKG")
    return windows


async def test_search_composite_zonal_statistics_and_preview_over_three_tiles(
    stac_stack: StacStack,
) -> None:
    catalog, workspace = stac_stack.catalog, stac_stack.workspace
    catalog.cogs.ranges.clear()
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        found = await client.call_tool("stac_search", search_args(catalog))
        assert not found.is_error, found.content
        ids = [item["id"] for item in found.structured_content["items"]]
        args = {
            "search": {"catalog": catalog.api, "ids": ids, "sortby": ["properties.datetime"]},
            "bbox": list(THREE_TILES),
            "assets": ["B04", "B08"],
            "mask": {"asset": "SCL", "drop": CLOUDS},
            "output": "median.tif",
        }
        made = await client.call_tool("stac_composite", args)
        assert not made.is_error, made.content
        windows = write_zones(workspace / "zones.gpkg", workspace / "median.tif")
        zonal = await client.call_tool(
            "zonal_stats", {"uri": "median.tif", "zones": "zones.gpkg", "id_field": "name", "stats": ["mean"]}
        )
        preview = await client.call_tool("raster_preview", {"uri": "median.tif", "max_size": 128})

    result = made.structured_content
    assert result["items"] == ids and len(ids) == 6 and result["bands"] == ["B04", "B08"]
    want = reference(catalog, str(workspace / "median.tif"), ["B04", "B08"], "median", CLOUDS)
    with rasterio.open(workspace / "median.tif") as out:
        got = out.read()
    np.testing.assert_allclose(got, want.astype("float32"), rtol=1e-6, equal_nan=True)
    read: dict[str, int] = {}
    for path, start, end in catalog.cogs.ranges:
        read[path] = read.get(path, 0) + end - start + 1
    sizes = {path: (catalog.cogs_root / path.lstrip("/")).stat().st_size for path in read}
    assert len(read) == 18 and sum(read.values()) < 0.8 * sum(sizes.values()) and catalog.cogs.whole == []

    assert not zonal.is_error, zonal.content
    means = {f["id"]: f["mean"] for f in zonal.structured_content["features"]}
    for name, (col, row, width, height) in zip(("a", "b"), windows, strict=True):
        np.testing.assert_allclose(means[name], np.nanmean(got[0, row : row + height, col : col + width]), rtol=1e-5)
    assert not preview.is_error, preview.content
    assert preview.structured_content["source_size"] == [result["width"], result["height"]]
    assert any(block.type == "image" for block in preview.content)


async def test_a_grid_past_the_threshold_runs_as_tiles_equal_to_the_reference(
    stac_stack: StacStack,
) -> None:
    catalog, workspace = stac_stack.catalog, stac_stack.workspace
    args = {
        "search": search_args(catalog),
        "assets": ["B03"],
        "reducer": "mean",
        "resolution": 20,
        "mask": {"asset": "SCL", "drop": CLOUDS},
        "output": "tiled.tif",
    }
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        made = await client.call_tool("stac_composite", args)

    assert not made.is_error, made.content
    call_id = call_of(stac_stack.store, "tiled.tif")
    with rasterio.open(workspace / "tiled.tif") as out:
        got, size = out.read(), (out.width, out.height)
    want = reference(catalog, str(workspace / "tiled.tif"), ["B03"], "mean", CLOUDS)
    np.testing.assert_allclose(got, want.astype("float32"), rtol=1e-6, equal_nan=True)
    assert size == (307, 390)
    assert call_id is not None and "tool.fanned_out" in event_types(stac_stack.store, call_id)
    assert not (workspace / ".geogate").exists()


async def test_a_cancelled_composite_leaves_nothing_in_the_workspace(stac_stack: StacStack) -> None:
    catalog, workspace, store = stac_stack.catalog, stac_stack.workspace, stac_stack.store
    before = sorted(p.name for p in workspace.iterdir())
    catalog.cogs.delay_s = (
        0.3  # each range a third of a second: the composite is still reading when the client gives up
    )
    args = {"search": search_args(catalog), "assets": ["B02", "B03", "B04"], "output": "cancelled.tif"}
    try:
        async with Client(stac_stack.url, sampling_callback=justify) as client:
            with pytest.raises(MCPError):
                await client.call_tool("stac_composite", args, read_timeout_seconds=2.0)
        wait_for_log(store, lambda: bool(call_of(store, "cancelled.tif")), what="the cancel's end", timeout_s=120)
    finally:
        catalog.cogs.delay_s = 0.0
    call_id = call_of(store, "cancelled.tif")
    assert call_id is not None and store.call_state(call_id).error_code == "cancelled"
    types = event_types(store, call_id)
    assert "tool.cancel_requested" in types and "tool.progress" in types, types  # stopped between two items
    assert sorted(p.name for p in workspace.iterdir()) == before


async def test_a_zonal_time_series_is_a_zone_by_date_table(stac_stack: StacStack) -> None:
    catalog = stac_stack.catalog
    shapes = [shapely.box(*box) for box in SERIES_ZONES.values()]
    zones = geopandas.GeoDataFrame({"name": list(SERIES_ZONES)}, geometry=shapes, crs="EPSG:32633")
    zones.to_file(stac_stack.workspace / "series_zones.gpkg")
    args = {
        "search": search_args(catalog),
        "asset": "B08",
        "zones": "series_zones.gpkg",
        "id_field": "name",
        "mask": {"asset": "SCL", "drop": CLOUDS},
    }
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        series = await client.call_tool("stac_zonal_series", args)

    assert not series.is_error, series.content
    rows = series.structured_content["rows"]
    assert [(row["id"], row["date"]) for row in rows] == [
        (zone, date) for date in series.structured_content["dates"] for zone in SERIES_ZONES
    ]
    for row in rows:
        mean, count = expected_zone(catalog, SERIES_ZONES[row["id"]], row["items"])
        assert row["count"] == pytest.approx(count)
        assert row.get("mean") is None if mean is None else row["mean"] == pytest.approx(mean, rel=1e-6)


async def test_a_composite_whose_worker_process_is_killed_ends_once_with_a_calm_runs_bytes(
    stac_stack: StacStack,
) -> None:
    catalog, workspace, store, outcome = stac_stack.catalog, stac_stack.workspace, stac_stack.store, {}
    args = {"search": search_args(catalog), "assets": ["B04"], "mask": {"asset": "SCL", "drop": CLOUDS}}
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        calm = await client.call_tool("stac_composite", args | {"output": "calm.tif"})
    assert not calm.is_error, calm.content

    async def call() -> None:
        async with Client(stac_stack.url, sampling_callback=justify) as client:
            outcome["result"] = await client.call_tool("stac_composite", args | {"output": "killed.tif"})

    def started() -> bool:
        requested = call_of_any(store, "killed.tif")
        return requested is not None and started_worker_pid(store, requested) is not None

    catalog.cogs.delay_s = 0.05  # long enough to be caught reading
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await anyio.to_thread.run_sync(lambda: wait_for_log(store, started, what="the composite to start"))
            call_id = call_of_any(store, "killed.tif")
            os.kill(started_worker_pid(store, call_id), signal.SIGKILL)  # the pool process running the composite
            assert not (workspace / "killed.tif").exists()
            catalog.cogs.delay_s = 0.0
    finally:
        catalog.cogs.delay_s = 0.0

    types = event_types(store, call_id)
    assert types.count("tool.succeeded") + types.count("tool.failed") == 1, types
    result = outcome["result"]
    if types.count("tool.succeeded"):  # redelivered and finished: the whole output, byte for byte the calm one
        killed = (workspace / "killed.tif").read_bytes()
        assert not result.is_error and killed == (workspace / "calm.tif").read_bytes()
        assert hashlib.sha256(killed).hexdigest() == result.structured_content["output"]["sha256"]
        assert types.count("tool.started") == 2
    else:
        assert result.is_error and not (workspace / "killed.tif").exists()
    assert partials(workspace, "killed.tif") == []


def objects(stack: StacStack) -> dict[str, Any]:
    """The bucket's objects under the root and its multipart uploads not completed."""
    listed = stack.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/").get("Contents", [])
    pending = stack.s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
    return {"keys": sorted(o["Key"] for o in listed), "uploads": [u["Key"] for u in pending]}


async def test_a_composite_written_to_the_bucket_is_the_reference_and_feeds_zonal_statistics_and_a_preview(
    stac_stack: StacStack, tmp_path: Path
) -> None:
    catalog, workspace = stac_stack.catalog, stac_stack.workspace
    target = f"s3://{BUCKET}/{PREFIX}/median_s3.tif"
    args = {
        "search": search_args(catalog),
        "bbox": list(THREE_TILES),
        "assets": ["B04", "B08"],
        "mask": {"asset": "SCL", "drop": CLOUDS},
        "output": target,
    }
    async with Client(stac_stack.url, sampling_callback=justify) as client:
        made = await client.call_tool("stac_composite", args)
        assert not made.is_error, made.content
        local = tmp_path / "median_s3.tif"
        stac_stack.s3.download_file(BUCKET, f"{PREFIX}/median_s3.tif", str(local))
        windows = write_zones(workspace / "zones_s3.gpkg", local)
        zonal = await client.call_tool(
            "zonal_stats", {"uri": target, "zones": "zones_s3.gpkg", "id_field": "name", "stats": ["mean"]}
        )
        preview = await client.call_tool("raster_preview", {"uri": target, "max_size": 128})

    assert made.structured_content["output"]["path"] == target
    assert hashlib.sha256(local.read_bytes()).hexdigest() == made.structured_content["output"]["sha256"]
    want = reference(catalog, str(local), ["B04", "B08"], "median", CLOUDS)
    with rasterio.open(local) as out:
        got = out.read()
    np.testing.assert_allclose(got, want.astype("float32"), rtol=1e-6, equal_nan=True)
    assert not zonal.is_error, zonal.content
    means = {f["id"]: f["mean"] for f in zonal.structured_content["features"]}
    for name, (col, row, width, height) in zip(("a", "b"), windows, strict=True):
        np.testing.assert_allclose(means[name], np.nanmean(got[0, row : row + height, col : col + width]), rtol=1e-5)
    assert not preview.is_error, preview.content
    assert any(block.type == "image" for block in preview.content)


async def test_a_cancelled_composite_into_the_bucket_leaves_no_object_nor_upload(stac_stack: StacStack) -> None:
    catalog, store = stac_stack.catalog, stac_stack.store
    before = objects(stac_stack)
    catalog.cogs.delay_s = 0.3  # the composite is still reading when the client gives up
    target = f"s3://{BUCKET}/{PREFIX}/cancelled.tif"
    args = {"search": search_args(catalog), "assets": ["B02", "B03", "B04"], "output": target}
    try:
        async with Client(stac_stack.url, sampling_callback=justify) as client:
            with pytest.raises(MCPError):
                await client.call_tool("stac_composite", args, read_timeout_seconds=2.0)
        wait_for_log(store, lambda: bool(call_of(store, target)), what="the cancel's end", timeout_s=120)
    finally:
        catalog.cogs.delay_s = 0.0
    call_id = call_of(store, target)
    assert call_id is not None and store.call_state(call_id).error_code == "cancelled"
    assert objects(stac_stack) == before and before["uploads"] == []
