"""Memory per job (`GEOGATE_JOB_MEMORY_MB`): a job's blow-up fails its own call at once, and the worker goes on.

A private Redis, one worker node with one pool process limited to 1 GiB of address space, and a gateway. The
blow-up is real: statistics of a 16384² raster (a sparse file of a few KB) read whole, about 2 GiB of arrays.
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import rasterio
import redis
from rasterio.transform import from_origin

from geogate.eventlog.store import EventStore
from geogate.eventlog.streams import Keys
from schemas.events import ToolFailed
from schemas.ids import call_aggregate
from tests.integration.conftest import start_gateway, start_worker, stop
from tests.mcp_http import call_tool
from tests.support import free_port, redis_server

pytestmark = pytest.mark.integration

LIMIT_MB = 1024


@dataclass
class Limited:
    url: str
    store: EventStore


def write_sparse(path: Path, side: int) -> None:
    """A `side`² byte raster with no block written: a small file that reads as `side`² zeros."""
    profile = {"driver": "GTiff", "width": side, "height": side, "count": 1, "dtype": "uint8", "tiled": True}
    profile |= {"sparse_ok": True, "compress": "deflate", "crs": "EPSG:32633"}
    with rasterio.open(path, "w", transform=from_origin(500000, 4100000, 10, 10), **profile):
        pass


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Limited]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_sparse(workspace / "huge.tif", 16384)
    with redis_server(tmp_path) as redis_url:
        port = free_port()
        env = {**os.environ, "REDIS_URL": redis_url, "GEOGATE_WORKSPACES": str(workspace), "GEOGATE_PORT": str(port)}
        env |= {"GEOGATE_JOB_MEMORY_MB": str(LIMIT_MB), "GEOGATE_TILE_MIN_PIXELS": str(1 << 40)}  # read whole
        worker = start_worker(env, concurrency=1)
        gateway = start_gateway(env, port)
        try:
            store = EventStore(redis.Redis.from_url(redis_url), Keys("geogate"))
            yield Limited(f"http://127.0.0.1:{port}/mcp", store)
        finally:
            stop(gateway)
            stop(worker)


def pong_worker(client: httpx.Client, url: str) -> str:
    reply = call_tool(client, url, "ping", {}).result
    assert not reply.get("isError"), reply
    return str(reply["structuredContent"]["worker"])


def test_a_job_past_the_memory_limit_fails_its_call_once_and_the_same_process_takes_the_next_call(
    limited: Limited,
) -> None:
    with httpx.Client(timeout=120) as client:
        before = pong_worker(client, limited.url)

        reply = call_tool(client, limited.url, "raster_stats", {"uri": "huge.tif"}).result
        after = pong_worker(client, limited.url)

    assert reply["isError"], reply
    assert (reply["structuredContent"]["error"]["code"], reply["structuredContent"]["error"]["retryable"]) == (
        "job.out_of_memory",
        False,
    )
    assert after == before  # the same pool process answered before and after
    events = limited.store.read_aggregate(call_aggregate(reply["_meta"]["io.geogate/call"]["call_id"]))
    assert [e.type for e in events].count("tool.started") == 1  # failed at once: not tried again
    assert events[-1].payload(ToolFailed).details == {"limit_mb": LIMIT_MB}
