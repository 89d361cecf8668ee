"""`stac_composite` through the MCP SDK client and the real stack (gateway, Redis, a Celery worker of two processes)
against stac-fastapi on pgstac over the Sentinel-2-like fixture, whose COGs a range server serves: search →
composite over an area crossing the three tiles → zonal statistics → preview, the composite equal to the reference
the unit tests compute (the fixture's files warped and reduced with NumPy), read in ranges; a grid past the tiling
threshold runs as tiles, equal to its reference too; a cancelled composite leaves nothing in the workspace."""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import geopandas
import numpy as np
import pytest
import rasterio
import redis
import shapely
from mcp import Client, MCPError
from rasterio.windows import Window
from rasterio.windows import bounds as window_bounds

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from tests.integration.conftest import start_gateway, start_worker, stop
from tests.integration.test_gdal_e2e import event_types
from tests.stac.catalog import SentinelCatalog, sentinel_catalog
from tests.stac.scenes import COLLECTION
from tests.support import free_port, redis_server, wait_for_log
from tests.unit.workers.stac.test_composite import AREA, CLOUDS, reference

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class CompositeStack:
    url: str
    catalog: SentinelCatalog
    workspace: Path
    store: EventStore


@pytest.fixture(scope="module")
def composite_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CompositeStack]:
    workdir = tmp_path_factory.mktemp("stac_composite_e2e")
    workspace = workdir / "workspace"
    workspace.mkdir()
    port = free_port()
    with sentinel_catalog(workdir) as catalog, redis_server(workdir) as r:
        env = {
            **os.environ,
            "REDIS_URL": r,
            "GEOGATE_WORKSPACES": str(workspace),
            "GEOGATE_TOOLSETS": "core,raster,analysis,previews,stac",
            "GEOGATE_STAC_CATALOGS": catalog.api.removeprefix("http://"),
            "GEOGATE_REMOTE_HOSTS": catalog.cogs.authority,
            "GEOGATE_TILE_MIN_PIXELS": "100000",  # a 40 m composite of the area (30,030 pixels) runs whole
            "GEOGATE_TILE_SIZE": "256",  # a 20 m one (119,730) as 2 × 2 tiles
        }
        worker = start_worker(env, concurrency=2)
        gateway = start_gateway(env, port)
        store = EventStore(redis.Redis.from_url(r), Keys("geogate"))
        try:
            yield CompositeStack(f"http://127.0.0.1:{port}/mcp", catalog, workspace, store)
        finally:
            stop(gateway)
            stop(worker)


def call_of(store: EventStore, output: str) -> str | None:
    """The id of the newest composite writing `output`, once it has ended (from the log)."""
    for stored in reversed(store.read("calls", count=None)):
        data = stored.event.data
        if stored.event.type == "tool.requested" and data.tool == "stac_composite" and data.args["output"] == output:
            state = store.call_state(data.call_id)
            return data.call_id if state is not None and state.terminal else None
    return None


def search_args(catalog: SentinelCatalog) -> dict:
    return {"catalog": catalog.api, "collections": [COLLECTION], "bbox": list(AREA), "sortby": ["properties.datetime"]}


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
    composite_stack: CompositeStack,
) -> None:
    catalog, workspace = composite_stack.catalog, composite_stack.workspace
    catalog.cogs.ranges.clear()
    async with Client(composite_stack.url) as client:
        found = await client.call_tool("stac_search", search_args(catalog))
        assert not found.is_error, found.content
        ids = [item["id"] for item in found.structured_content["items"]]
        args = {
            "search": {"catalog": catalog.api, "ids": ids, "sortby": ["properties.datetime"]},
            "bbox": list(AREA),
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
    composite_stack: CompositeStack,
) -> None:
    catalog, workspace = composite_stack.catalog, composite_stack.workspace
    args = {
        "search": search_args(catalog),
        "assets": ["B03"],
        "reducer": "mean",
        "resolution": 20,
        "mask": {"asset": "SCL", "drop": CLOUDS},
        "output": "tiled.tif",
    }
    async with Client(composite_stack.url) as client:
        made = await client.call_tool("stac_composite", args)

    assert not made.is_error, made.content
    call_id = call_of(composite_stack.store, "tiled.tif")
    with rasterio.open(workspace / "tiled.tif") as out:
        got, size = out.read(), (out.width, out.height)
    want = reference(catalog, str(workspace / "tiled.tif"), ["B03"], "mean", CLOUDS)
    np.testing.assert_allclose(got, want.astype("float32"), rtol=1e-6, equal_nan=True)
    assert size == (307, 390)
    assert call_id is not None and "tool.fanned_out" in event_types(composite_stack.store, call_id)
    assert not (workspace / ".geogate").exists()


async def test_a_cancelled_composite_leaves_nothing_in_the_workspace(composite_stack: CompositeStack) -> None:
    catalog, workspace, store = composite_stack.catalog, composite_stack.workspace, composite_stack.store
    before = sorted(p.name for p in workspace.iterdir())
    catalog.cogs.delay_s = (
        0.3  # each range a third of a second: the composite is still reading when the client gives up
    )
    args = {"search": search_args(catalog), "assets": ["B02", "B03", "B04"], "output": "cancelled.tif"}
    try:
        async with Client(composite_stack.url) as client:
            with pytest.raises(MCPError):
                await client.call_tool("stac_composite", args, read_timeout_seconds=2.0)
        ended = lambda: call_of(store, "cancelled.tif") is not None  # noqa: E731
        wait_for_log(store, ended, what="the cancelled composite to end", timeout_s=120)
    finally:
        catalog.cogs.delay_s = 0.0
    call_id = call_of(store, "cancelled.tif")
    assert call_id is not None and store.call_state(call_id).error_code == "cancelled"
    types = event_types(store, call_id)
    assert "tool.cancel_requested" in types and "tool.progress" in types, types  # stopped between two items
    assert sorted(p.name for p in workspace.iterdir()) == before
