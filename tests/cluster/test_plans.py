"""A five-step plan (clip → reproject → terrain → zonal statistics → map) with the worker node running its third step
SIGKILLed in the middle of it (issue 49's acceptance). The node stops itself once the terrain step has started
(`GEOGATE_FAULT_PAUSE_AT=job.raster_terrain`, `workers.run.faults`), its whole process group is killed, and a fresh
node finishes the plan. One outcome, the calm run's sha256 for every file, each step started at most once more,
`geogate replay --check` clean; the last file's provenance names every step and input back to the DEM, and its
re-run writes the same sha256."""

import asyncio
import hashlib
import signal
import threading
import time
from pathlib import Path
from typing import Any

import geopandas as gpd
import pyogrio
import pytest
import shapely
from mcp import Client

from schemas.ids import call_aggregate
from schemas.tools.plans import step_call_id
from tests.cluster.conftest import Cluster, running_cluster
from tests.cluster.load import OUTCOMES, replay_check
from tests.cluster.test_fan_in_faults import paused
from tests.support import JUSTIFICATION, wait_for
from workers.run.faults import job_point

pytestmark = pytest.mark.cluster

ALL_TOOLS = {"GEOGATE_TOOLSETS": "all"}
"""`plan_run` is opt-in (the `plans` toolset)."""
BOX = [502000.0, 4082000.0, 514000.0, 4094000.0]
"""1200 × 1200 pixels of the cluster's 2048² DEM (EPSG:32633, 10 m)."""
TOOLS = ["raster_clip", "raster_reproject", "raster_terrain", "zonal_stats", "map_image"]
TERRAIN = TOOLS.index("raster_terrain")


def five_steps(folder: str) -> list[dict[str, Any]]:
    ref = lambda step: {"$ref": f"{step}.output.path"}  # noqa: E731
    warp = {"uri": ref("clip"), "output": f"{folder}/warp.tif", "dst_crs": "EPSG:3035", "resampling": "bilinear"}
    zonal = {"uri": ref("slope"), "zones": "zones.fgb", "output": f"{folder}/zones.fgb", "stats": ["mean", "max"]}
    layers = [{"kind": "raster", "uri": ref("slope")}, {"kind": "vector", "uri": ref("zonal"), "field": "zs_mean"}]
    return [
        {
            "id": "clip",
            "tool": "raster_clip",
            "args": {"uri": "big.tif", "output": f"{folder}/clip.tif", "bounds": BOX},
        },
        {"id": "warp", "tool": "raster_reproject", "args": warp},
        {
            "id": "slope",
            "tool": "raster_terrain",
            "args": {"uri": ref("warp"), "output": f"{folder}/slope.tif", "product": "slope"},
        },
        {"id": "zonal", "tool": "zonal_stats", "args": zonal},
        {"id": "map", "tool": "map_image", "args": {"layers": layers, "width": 400, "height": 300}},
    ]


def write_zones(workspace: Path) -> None:
    corners = [(503000, 4083000), (508000, 4083000), (503000, 4088000), (508000, 4088000)]
    squares = [shapely.box(x, y, x + 4000, y + 4000) for x, y in corners]
    frame = gpd.GeoDataFrame({"name": ["sw", "se", "nw", "ne"]}, geometry=squares, crs="EPSG:32633")
    pyogrio.write_dataframe(frame, workspace / "zones.fgb")


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    answer = await client.call_tool(tool, args)
    assert not answer.is_error, answer.content
    called = (answer.meta or {}).get("io.geogate/call", {})  # the gateway's own tools are no call on the log
    return (answer.structured_content or {}) | {"call_id": called.get("call_id")}


def call(url: str, tool: str, args: dict[str, Any], into: dict[str, Any]) -> None:
    """One call through the SDK client, from a thread; its structured result (and call id) in `into`."""

    async def go() -> None:
        began = time.monotonic()
        async with Client(url) as client:
            into.update(await _call(client, tool, args))
        into["seconds"] = time.monotonic() - began

    asyncio.run(go())


def justify_plan(url: str, steps: list[dict[str, Any]]) -> None:
    """A dry run's needed justifications, persisted: the 3-request flow of a client that cannot sample."""

    async def go() -> None:
        async with Client(url) as client:
            dry = await _call(client, "plan_run", {"steps": steps, "dry_run": True})
            items = [
                {"hash": r["hash"], "domain": r["domain"], "justification": JUSTIFICATION} for r in dry["required"]
            ]
            assert items, "the reprojection's CRS and resampling need justifications"
            await _call(client, "persist_justifications", {"items": items})

    asyncio.run(go())


def types_of(cluster: Cluster, call_id: str) -> list[str]:
    return [e.type for e in cluster.store().read_aggregate(call_aggregate(call_id))]


def plan_ids(cluster: Cluster) -> set[str]:
    store = cluster.store()
    keys = store.redis.scan_iter(match=store.live.call("*"))
    return {k.decode().rsplit(":", 1)[1] for k in keys if store.redis.hget(k, "tool") == b"plan_run"}


def starts(cluster: Cluster, plan: str) -> list[int]:
    return [types_of(cluster, step_call_id(plan, i)).count("tool.started") for i in range(len(TOOLS))]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files(result: dict[str, Any]) -> list[str]:
    return [s["result"]["output"]["sha256"] for s in result["steps"] if s["tool"] != "map_image"]


def picture(result: dict[str, Any]) -> dict[str, Any]:
    drawn = result["steps"][-1]["result"]
    return {k: drawn[k] for k in ("image_bytes", "colours", "bounds", "frame")} | {
        "breaks": [layer["breaks"] for layer in drawn["layers"]]
    }


def run_faulted(cluster: Cluster, steps: list[dict[str, Any]], before: set[str]) -> tuple[dict[str, Any], str]:
    """The plan on a node that stops once its terrain step has started; that node SIGKILLed, a fresh one added."""
    plain = cluster.env
    cluster.env = {**plain, "GEOGATE_FAULT_PAUSE_AT": job_point("raster_terrain")}
    victim = cluster.add_worker()
    cluster.env = plain
    answer: dict[str, Any] = {}
    thread = threading.Thread(target=call, args=(cluster.gateways[0][0], "plan_run", {"steps": steps}, answer))
    thread.start()
    wait_for(lambda: paused(cluster), what="the terrain step to start and stop", timeout_s=90)
    (plan,) = plan_ids(cluster) - before
    assert types_of(cluster, step_call_id(plan, TERRAIN))[-1] == "tool.started"  # mid-step: started, not ended
    cluster.signal_node(victim, signal.SIGKILL)
    cluster.add_worker(concurrency=2)  # as an orchestrator restarts a dead node; two processes for `rerun`, below
    thread.join(timeout=120)
    return answer, plan


def test_a_node_killed_in_a_plans_third_step_costs_one_restart_of_it_and_changes_no_output(
    tmp_path: Path, raster_dir: Path
) -> None:
    with running_cluster(tmp_path, raster_dir, gateways=1, workers=1, env_extra=ALL_TOOLS) as cluster:
        url, root = cluster.gateways[0][0], cluster.workspace
        write_zones(root)
        justify_plan(url, five_steps("calm"))
        calm: dict[str, Any] = {}
        call(url, "plan_run", {"steps": five_steps("calm")}, calm)
        cluster.signal_node(cluster.workers[0], signal.SIGKILL)  # the next node is the only one, and pauses

        faulted, plan = run_faulted(cluster, five_steps("faulted"), plan_ids(cluster))

        assert [s["tool"] for s in faulted["steps"]] == TOOLS, faulted
        assert files(faulted) == files(calm)
        names = ["clip.tif", "warp.tif", "slope.tif", "zones.fgb"]
        assert files(faulted) == [sha256(root / "faulted" / n) for n in names]
        assert picture(faulted) == picture(calm)
        assert sum(map(types_of(cluster, plan).count, OUTCOMES)) == 1
        steps = [step_call_id(plan, i) for i in range(len(TOOLS))]
        assert [sum(map(types_of(cluster, s).count, OUTCOMES)) for s in steps] == [1] * len(TOOLS)
        assert "tool.redispatched" in types_of(cluster, steps[TERRAIN])
        assert starts(cluster, plan) == [1, 1, 2, 1, 1] and starts(cluster, calm["call_id"]) == [1] * len(TOOLS)
        done = replay_check(cluster.env)
        assert done.returncode == 0, done.stdout + done.stderr

        record: dict[str, Any] = {}  # `rerun` holds a pool process while the calls it makes run on the other
        call(url, "provenance", {"path": "faulted/zones.fgb"}, record)
        again: dict[str, Any] = {}
        call(url, "rerun", {"path": "faulted/zones.fgb", "folder": "again"}, again)

        assert [(s["call_id"], s["tool"]) for s in record["steps"]] == list(zip(steps[:4], TOOLS[:4], strict=True))
        read = {Path(i["path"]).relative_to(root).as_posix() for s in record["steps"] for i in s["inputs"]}
        assert read == {"big.tif", "zones.fgb", "faulted/clip.tif", "faulted/warp.tif", "faulted/slope.tif"}
        assert record["drift"] == [] and record["steps"][-1]["outputs"][0]["sha256"] == files(calm)[-1]
        assert again["same"] and [c["same"] for c in again["calls"]] == [True] * 4
        assert sha256(root / "again" / "zones.fgb") == sha256(root / "faulted" / "zones.fgb")
        seconds = {name: round(r["seconds"], 2) for name, r in (("calm", calm), ("killed", faulted), ("rerun", again))}
        print(f"\n[chaos] five-step plan, a node killed in its third step: {seconds}")
