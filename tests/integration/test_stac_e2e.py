"""`stac_search` through the MCP SDK client and the real stack (gateway, Redis, Celery worker) against a real STAC
API: stac-fastapi on pgstac (a throwaway PostgreSQL cluster) over the Sentinel-2-like fixture, whose COGs a range
server serves. A found asset is then read by `raster_info` through GEOGATE_REMOTE_HOSTS, the ranges counted."""

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import shapely
from mcp import Client

from tests.integration.conftest import start_gateway, start_worker, stop
from tests.stac.catalog import SentinelCatalog, sentinel_catalog
from tests.stac.scenes import COLLECTION, SIZE
from tests.stac.servers import Flaky, flaky_proxy
from tests.support import free_port, redis_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

AREA = (16.33, 46.45, 16.42, 46.55)
"""Crosses tiles 0 and 2 of the fixture, not tile 1."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class StacStack:
    url: str
    catalog: SentinelCatalog
    flaky: Flaky


@pytest.fixture(scope="module")
def stac_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StacStack]:
    workdir = tmp_path_factory.mktemp("stac_e2e")
    (workdir / "workspace").mkdir()
    port = free_port()
    with (
        sentinel_catalog(workdir) as catalog,
        flaky_proxy(catalog.api, failures=0) as flaky,
        redis_server(workdir) as r,
    ):
        env = {
            **os.environ,
            "REDIS_URL": r,
            "GEOGATE_WORKSPACES": str(workdir / "workspace"),
            "GEOGATE_TOOLSETS": "core,raster,stac",
            "GEOGATE_STAC_CATALOGS": f"{catalog.api.removeprefix('http://')},{flaky.authority}",
            "GEOGATE_STAC_BACKOFF_S": "0.05",
            "GEOGATE_REMOTE_HOSTS": catalog.cogs.authority,
        }
        worker = start_worker(env, concurrency=1)
        gateway = start_gateway(env, port)
        try:
            yield StacStack(f"http://127.0.0.1:{port}/mcp", catalog, flaky)
        finally:
            stop(gateway)
            stop(worker)


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
    async with Client(stac_stack.url) as client:
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
    async with Client(stac_stack.url) as client:
        found = await client.call_tool("stac_search", {"catalog": stac_stack.flaky.url, "limit": 2})

    assert not found.is_error, found.content
    assert (found.structured_content["retries"], len(found.structured_content["items"])) == (2, 2)
    assert len(stac_stack.flaky.failed) == 2


async def test_a_catalog_off_the_list_is_refused_naming_the_setting(stac_stack: StacStack) -> None:
    with flaky_proxy(stac_stack.catalog.api, failures=0) as unlisted:
        async with Client(stac_stack.url) as client:
            refused = await client.call_tool("stac_search", {"catalog": unlisted.url})

    error = refused.structured_content["error"]
    assert refused.is_error and (error["code"], error["field"]) == ("stac.not_allowed", "catalog")
    assert "GEOGATE_STAC_CATALOGS" in error["message"]
    assert unlisted.passed == unlisted.failed == []
