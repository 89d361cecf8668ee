"""One tiled job under faults (issue 29): worker nodes SIGKILLed mid-job, and a cancel mid-job.

The job is a reprojection planned as tiles over every worker node. Each test ends by checking the log: one outcome
for the parent and for every tile, `geogate replay --check` clean, and no part left in the workspace.
"""

import asyncio
import hashlib
import os
import signal
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import rasterio
from mcp import Client

from geogate.calls.projections.running import RunningEntry
from schemas.ids import call_aggregate
from schemas.tools.tiling import tile_call_id, tile_of
from tests.cluster.conftest import Cluster, running_cluster, write_raster
from tests.cluster.load import replay_check
from tests.support import justify, wait_for, wait_for_log

pytestmark = pytest.mark.cluster

TILED = {"GEOGATE_TILE_MIN_PIXELS": "65536", "GEOGATE_TILE_SIZE": "512"}
"""The chaos raster (2048² or 4096²) as a grid of 512² tiles."""
OUTCOMES = ("tool.succeeded", "tool.failed")


SLOW_PX = 4096
"""A raster whose lanczos warp takes seconds on two workers: long enough to cancel it or watch it run."""


@pytest.fixture(scope="module")
def slow_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiles-rasters")
    write_raster(root / "slow.tif", SLOW_PX)
    return root


def add_slow(cluster: Cluster, slow_dir: Path) -> None:
    os.link(slow_dir / "slow.tif", cluster.workspace / "slow.tif")


def reproject(url: str, output: str, result: dict[str, object], uri: str = "big.tif") -> None:
    """One gated reprojection (justified through sampling), from a thread; its result and wall time in `result`."""

    async def call() -> None:
        async with Client(url, sampling_callback=justify) as client:
            began = time.monotonic()
            args = {"uri": uri, "output": output, "dst_crs": "EPSG:4326", "resampling": "lanczos"}
            result["answer"] = await client.call_tool("raster_reproject", args)
            result["seconds"] = time.monotonic() - began

    asyncio.run(call())


def call_of(cluster: Cluster, output: str) -> str | None:
    store = cluster.store()
    for key in store.redis.scan_iter(match=store.live.call("*")):
        raw = store.redis.hget(key, "args")
        if raw and f'"output":"{output}"' in raw.decode() and tile_of(key.decode().rsplit(":", 1)[1]) is None:
            return key.decode().rsplit(":", 1)[1]
    return None


def a_tile_started(cluster: Cluster, output: str) -> bool:
    """The call writing `output` has fanned out, and one of its tiles has started."""
    parent = call_of(cluster, output)
    if parent is None:
        return False
    store = cluster.store()
    tiles = int(store.redis.hget(store.live.call(parent), "tiles") or 0)
    types = (e.type for i in range(tiles) for e in store.read_aggregate(call_aggregate(tile_call_id(parent, i))))
    return "tool.started" in types


def tile_runs(cluster: Cluster, parent: str) -> list[RunningEntry]:
    store = cluster.store()
    entries = [RunningEntry.parse(k, v) for k, v in store.redis.hgetall(store.live.running()).items()]
    return [e for e in entries if (t := tile_of(e.call_id)) and t[0] == parent and cluster.node_holding(e.lease)]


def _pid(entry: RunningEntry) -> int:
    return int(entry.lease.split(":")[1])


def on_a_new_node(cluster: Cluster, parent: str, killed: list[int]) -> bool:
    return any(_pid(e) not in killed for e in tile_runs(cluster, parent))


def outcomes(cluster: Cluster, call_id: str) -> int:
    types = [e.type for e in cluster.store().read_aggregate(call_aggregate(call_id))]
    return sum(types.count(t) for t in OUTCOMES)


def assert_every_call_ended_once(cluster: Cluster, parent: str) -> None:
    tiles = int(cluster.store().redis.hget(cluster.store().live.call(parent), "tiles") or 0)
    assert tiles > 1
    assert outcomes(cluster, parent) == 1
    assert [outcomes(cluster, tile_call_id(parent, i)) for i in range(tiles)] == [1] * tiles
    done = replay_check(cluster.env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list((cluster.workspace / ".geogate" / "tiles").glob("*/*"))


def pixels(path: Path) -> np.ndarray:
    with rasterio.open(path) as src:
        return src.read()


def test_two_node_kills_during_one_tiled_job_cost_seconds_and_change_no_pixel(tmp_path: Path, raster_dir: Path) -> None:
    with running_cluster(tmp_path, raster_dir, gateways=1, workers=3, env_extra=TILED) as cluster:
        calm: dict[str, object] = {}
        reproject(cluster.gateways[0][0], "calm.tif", calm)
        assert not calm["answer"].is_error, calm["answer"].content  # type: ignore[attr-defined]

        faulted: dict[str, object] = {}
        thread = threading.Thread(target=reproject, args=(cluster.gateways[0][0], "faulted.tif", faulted))
        thread.start()
        wait_for(lambda: call_of(cluster, "faulted.tif") is not None, what="the tiled call to be requested")
        parent = call_of(cluster, "faulted.tif")
        assert parent is not None
        killed: list[int] = []
        running_on_killed: set[str] = set()
        for _ in range(2):  # two nodes, one after the other, each while it runs a tile
            wait_for(lambda: on_a_new_node(cluster, parent, killed), what="a tile on a live node", timeout_s=60)
            victim = cluster.node_holding(next(e.lease for e in tile_runs(cluster, parent) if _pid(e) not in killed))
            assert victim is not None
            killed.append(victim.pid)
            running_on_killed |= {e.call_id for e in tile_runs(cluster, parent) if _pid(e) == victim.pid}
            cluster.signal_node(victim, 9)
        for _ in killed:
            cluster.add_worker()  # as an orchestrator restarts a dead node
        thread.join(timeout=120)

        answer = faulted["answer"]
        assert not answer.is_error, answer.content  # type: ignore[attr-defined]
        assert np.array_equal(pixels(cluster.workspace / "calm.tif"), pixels(cluster.workspace / "faulted.tif"))
        written = hashlib.sha256((cluster.workspace / "faulted.tif").read_bytes()).hexdigest()
        assert answer.structured_content["output"]["sha256"] == written  # type: ignore[attr-defined]
        late = faulted["seconds"] - calm["seconds"]  # type: ignore[operator]
        print(f"\n[chaos] tiled job: calm {calm['seconds']:.2f} s, two kills {faulted['seconds']:.2f} s (+{late:.2f})")
        assert_every_call_ended_once(cluster, parent)
        assert cluster.store().read_aggregate(call_aggregate(parent))[-1].type == "tool.succeeded"
        assert_only_killed_tiles_ran_again(cluster, parent, running_on_killed)


def assert_only_killed_tiles_ran_again(cluster: Cluster, parent: str, running_on_killed: set[str]) -> None:
    """The reaper re-dispatched what the dead nodes were running, and nothing else started twice."""
    store = cluster.store()
    tiles = int(store.redis.hget(store.live.call(parent), "tiles") or 0)
    ids = [tile_call_id(parent, i) for i in range(tiles)]
    logs = {tile: [e.type for e in store.read_aggregate(call_aggregate(tile))] for tile in ids}
    starts = {tile: types.count("tool.started") for tile, types in logs.items()}
    twice = {tile for tile, count in starts.items() if count > 1}
    redispatched = {tile for tile, types in logs.items() if "tool.redispatched" in types}
    assert twice, "no tile was re-dispatched after two node kills"
    assert max(starts.values()) == 2
    assert twice <= running_on_killed, f"tiles not on a killed node started twice: {twice - running_on_killed}"
    assert twice <= redispatched


def test_a_cancelled_tiled_job_leaves_no_part_no_output_and_ends_every_tile_once(
    tmp_path: Path, raster_dir: Path, slow_dir: Path
) -> None:
    with running_cluster(tmp_path, raster_dir, gateways=1, workers=2, env_extra=TILED) as cluster:
        add_slow(cluster, slow_dir)
        result: dict[str, object] = {}

        store = cluster.store()

        async def call_then_cancel() -> None:
            async with Client(cluster.gateways[0][0], sampling_callback=justify) as client:
                args = {"uri": "slow.tif", "output": "cancelled.tif", "dst_crs": "EPSG:4326", "resampling": "lanczos"}
                call = asyncio.create_task(client.call_tool("raster_reproject", args))
                started = partial(a_tile_started, cluster, "cancelled.tif")
                await asyncio.to_thread(wait_for_log, store, started, what="a tile of the call to start", timeout_s=60)
                assert not call.done()  # 64 tiles: the first has just started
                call.cancel()  # the client abandons the call: the SDK sends notifications/cancelled
                with pytest.raises(asyncio.CancelledError):
                    await call
                result["done"] = True

        asyncio.run(call_then_cancel())
        parent = call_of(cluster, "cancelled.tif")
        assert parent is not None
        wait_for(lambda: store.call_state(parent).terminal, what="the cancelled parent to end", timeout_s=60)
        tiles = int(store.redis.hget(store.live.call(parent), "tiles") or 0)
        every_tile_ended = lambda: all(outcomes(cluster, tile_call_id(parent, i)) for i in range(tiles))  # noqa: E731
        wait_for(every_tile_ended, what="every tile to end", timeout_s=60)
        assert store.call_state(parent).error_code == "cancelled"
        assert not (cluster.workspace / "cancelled.tif").exists()
        assert_every_call_ended_once(cluster, parent)


def test_the_call_page_draws_the_tiles_as_a_live_grid_coloured_by_state(
    tmp_path: Path, raster_dir: Path, slow_dir: Path
) -> None:
    """The ops page of a tiled call, in Debian's Chromium while the job runs: one cell per tile, which turn from
    queued or running to done as the log says, and stop reloading once the call has ended."""
    from playwright.sync_api import expect, sync_playwright

    with running_cluster(tmp_path, raster_dir, gateways=1, workers=2, env_extra=TILED) as cluster:
        add_slow(cluster, slow_dir)
        result: dict[str, object] = {}
        thread = threading.Thread(target=reproject, args=(cluster.gateways[0][0], "watched.tif", result, "slow.tif"))
        thread.start()
        wait_for(lambda: call_of(cluster, "watched.tif") is not None, what="the tiled call to be requested")
        parent = call_of(cluster, "watched.tif")
        store = cluster.store()
        wait_for(lambda: store.redis.hget(store.live.call(parent), "tiles") is not None, what="the fan-out")
        tiles = int(store.redis.hget(store.live.call(parent), "tiles"))
        page_url = cluster.gateways[0][0].removesuffix("/mcp") + f"/ops/calls/{parent}"
        for node in cluster.workers:  # the job holds still from its fan-out until the page first draws
            cluster.signal_node(node, signal.SIGSTOP)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page()
            try:
                page.goto(page_url)
                cells = page.locator("#tile-grid .tilegrid i.tg")
                expect(cells).to_have_count(tiles)
                first = [cells.nth(i).get_attribute("data-state") for i in range(tiles)]
            finally:
                for node in cluster.workers:
                    cluster.signal_node(node, signal.SIGCONT)
            expect(page.locator("#tile-grid")).to_have_attribute("data-live", "no", timeout=60_000)
            last = [cells.nth(i).get_attribute("data-state") for i in range(tiles)]
            page.screenshot(path=str(tmp_path / "tiles.png"))
            browser.close()
        thread.join(timeout=60)
        assert not result["answer"].is_error  # type: ignore[attr-defined]
        assert first != last and set(first) <= {"queued", "running", "done", "redispatched"}
        assert last == ["done"] * tiles == [store.hash_strings(store.live.tiles(parent))[str(i)] for i in range(tiles)]
