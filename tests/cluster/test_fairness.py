"""Fairness between clients: one client's 1,000-tile job holds no other client's small call behind its tiles.

Two worker nodes (one pool process each) and a gateway on a real Redis; one client asks for the statistics of a
raster cut into 1,000 tiles of 256², another pings back to back from the fan-out to the job's end.
"""

import asyncio
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import rasterio
from mcp import Client
from rasterio.transform import from_origin

from tests.cluster.conftest import Cluster, running_cluster
from tests.support import wait_for

pytestmark = pytest.mark.cluster

SIDE = 256
COLUMNS, ROWS = 40, 25
"""The raster's grid of tiles: 1,000 tiles of `SIDE`² pixels."""
TILED = {"GEOGATE_TILE_MIN_PIXELS": "65536", "GEOGATE_TILE_SIZE": str(SIDE)}
PING_WITHIN_S = 2.0


def write_wide(path: Path) -> None:
    """A small file (deflated bytes) whose grid is `COLUMNS` × `ROWS` tiles."""
    rows = np.arange(ROWS * SIDE, dtype="uint16")[:, None] + np.arange(COLUMNS * SIDE, dtype="uint16")[None, :]
    profile = {"driver": "GTiff", "width": COLUMNS * SIDE, "height": ROWS * SIDE, "count": 1, "dtype": "uint8"}
    profile |= {"crs": "EPSG:32633", "transform": from_origin(500000, 4100000, 10, 10), "compress": "deflate"}
    profile |= {"tiled": True, "blockxsize": SIDE, "blockysize": SIDE}
    with rasterio.open(path, "w", **profile) as dst:
        dst.write((rows % 251).astype("uint8"), 1)


def huge_job(url: str, outcome: dict[str, object]) -> None:
    async def call() -> None:
        async with Client(url) as client:
            outcome["answer"] = await client.call_tool("raster_stats", {"uri": "wide.tif"})

    asyncio.run(call())


def ping_while(url: str, running: threading.Thread) -> list[float]:
    """Another client's pings, one after the other, while `running` lives: each one's seconds to its answer."""

    async def pings() -> list[float]:
        seconds = []
        async with Client(url) as client:
            while running.is_alive():
                began = time.monotonic()
                answer = await client.call_tool("ping", {})
                assert not answer.is_error, answer.content
                seconds.append(time.monotonic() - began)
        return seconds

    return asyncio.run(pings())


def fanned_out(cluster: Cluster) -> bool:
    store = cluster.store()
    return any(store.redis.hget(key, "tiles") for key in store.redis.scan_iter(match=store.live.call("*")))


def test_another_clients_ping_answers_within_two_seconds_throughout_a_1000_tile_job(
    tmp_path: Path, raster_dir: Path
) -> None:
    with running_cluster(tmp_path, raster_dir, gateways=1, workers=2, env_extra=TILED) as cluster:
        write_wide(cluster.workspace / "wide.tif")
        url = cluster.gateways[0][0]
        outcome: dict[str, object] = {}
        job = threading.Thread(target=huge_job, args=(url, outcome))
        job.start()
        wait_for(lambda: fanned_out(cluster), what="the job's fan-out", timeout_s=60, interval_s=0.005)
        seconds = ping_while(url, job)
        job.join()

        answer = outcome["answer"]
        assert not answer.is_error, answer.content  # type: ignore[attr-defined]
        store, parent = cluster.store(), answer.meta["io.geogate/call"]["call_id"]  # type: ignore[attr-defined]
        assert int(store.redis.hget(store.live.call(parent), "tiles")) == COLUMNS * ROWS
        print(
            f"\n[fairness] {len(seconds)} pings during {COLUMNS * ROWS} tiles: "
            f"p50 {statistics.median(seconds) * 1000:.0f} ms, max {max(seconds) * 1000:.0f} ms"
        )
        assert len(seconds) >= 10
        assert max(seconds) < PING_WITHIN_S
