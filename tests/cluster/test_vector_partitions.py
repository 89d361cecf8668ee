"""A partitioned overlay under a fault: a worker node SIGKILLed while it runs a cell. The call ends once with the
features a calm run writes, every cell ended once, `geogate replay --check` clean, no part left in the workspace."""

import asyncio
import threading
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pytest
import shapely
from mcp import Client

from schemas.ids import call_aggregate
from schemas.tools.tiling import tile_call_id
from tests.cluster.conftest import Cluster, running_cluster
from tests.cluster.test_tiles import assert_every_call_ended_once, call_of, tile_runs
from tests.support import justify, wait_for

pytestmark = pytest.mark.cluster

SIDE = 150
"""Two jittered grids of 150² = 22,500 quadrilaterals, the second shifted by half a cell."""
PARTITIONED = {"GEOGATE_VECTOR_PARTITION_FEATURES": "1500"}
"""The overlay as 30 cells."""


def grid(offset: float, seed: int) -> gpd.GeoDataFrame:
    rng = np.random.default_rng(seed)
    xs, ys = np.meshgrid(np.arange(SIDE) * 100.0 + offset, np.arange(SIDE) * 100.0 + offset)
    x, y = xs.ravel(), ys.ravel()
    j = rng.uniform(-10, 10, (4, x.size))
    rings = np.stack(
        [
            np.c_[x + j[0], y + j[1]],
            np.c_[x + 100, y],
            np.c_[x + 100 + j[2], y + 100 + j[3]],
            np.c_[x, y + 100],
            np.c_[x + j[0], y + j[1]],
        ],
        axis=1,
    )
    return gpd.GeoDataFrame({"n": np.arange(x.size)}, geometry=shapely.polygons(rings), crs="EPSG:32633")


def overlay(url: str, output: str, result: dict[str, object]) -> None:
    async def call() -> None:
        async with Client(url, sampling_callback=justify) as client:
            args = {"uri": "a.gpkg", "other": "b.gpkg", "output": output, "how": "union"}
            result["answer"] = await client.call_tool("vector_overlay", args)

    asyncio.run(call())


def types_of(cluster: Cluster, call_id: str) -> list[str]:
    return [e.type for e in cluster.store().read_aggregate(call_aggregate(call_id))]


def features(cluster: Cluster, name: str) -> gpd.GeoDataFrame:
    return pyogrio.read_dataframe(cluster.workspace / name)


def test_a_node_killed_during_a_partitioned_overlay_changes_no_feature(tmp_path: Path, raster_dir: Path) -> None:
    with running_cluster(tmp_path, raster_dir, gateways=1, workers=3, env_extra=PARTITIONED) as cluster:
        pyogrio.write_dataframe(grid(0, 1), cluster.workspace / "a.gpkg")
        pyogrio.write_dataframe(grid(50, 2), cluster.workspace / "b.gpkg")
        calm: dict[str, object] = {}
        overlay(cluster.gateways[0][0], "calm.gpkg", calm)
        assert not calm["answer"].is_error, calm["answer"].content  # type: ignore[attr-defined]

        faulted: dict[str, object] = {}
        thread = threading.Thread(target=overlay, args=(cluster.gateways[0][0], "faulted.gpkg", faulted))
        thread.start()
        wait_for(lambda: call_of(cluster, "faulted.gpkg") is not None, what="the partitioned call to be requested")
        parent = call_of(cluster, "faulted.gpkg")
        assert parent is not None
        seen: list = []
        wait_for(lambda: bool(seen.extend(tile_runs(cluster, parent)) or seen), what="a cell running", timeout_s=60)
        victim = cluster.node_holding(seen[0].lease)
        assert victim is not None
        cluster.signal_node(victim, 9)  # its pool process was running a cell a moment ago
        cluster.add_worker()  # as an orchestrator restarts a dead node
        thread.join(timeout=180)

        answer = faulted["answer"]
        assert not answer.is_error, answer.content  # type: ignore[attr-defined]
        a, b = features(cluster, "calm.gpkg"), features(cluster, "faulted.gpkg")
        assert len(a) == len(b) == answer.structured_content["feature_count"] > SIDE * SIDE  # type: ignore[attr-defined]
        pd.testing.assert_frame_equal(
            pd.DataFrame(a.drop(columns="geometry")), pd.DataFrame(b.drop(columns="geometry"))
        )
        assert shapely.equals_exact(a.geometry.values.to_numpy(), b.geometry.values.to_numpy(), tolerance=0).all()
        assert_every_call_ended_once(cluster, parent)
        store = cluster.store()
        cells = int(store.redis.hget(store.live.call(parent), "tiles") or 0)
        again = [i for i in range(cells) if "tool.redispatched" in types_of(cluster, tile_call_id(parent, i))]
        print(f"\n[chaos] partitioned overlay: {cells} cells, {len(again)} re-dispatched after the kill")
