"""A tiled call's fan-in killed at each of its steps: the node running it stops itself at a named pause point
(`workers.run.faults`), is SIGKILLed as a whole process group, and a fresh node finishes the call. One outcome, the
calm run's sha256, the fan-in started twice, `geogate replay --check` clean, no part left."""

import asyncio
import hashlib
import signal
import threading
from pathlib import Path

import pytest
from mcp import Client

from schemas.ids import call_aggregate
from tests.cluster.conftest import Cluster, running_cluster
from tests.cluster.test_tiles import TILED, assert_every_call_ended_once, call_of
from tests.processes import tree
from tests.support import justify, wait_for

pytestmark = pytest.mark.cluster

REPROJECT = {"tool": "raster_reproject", "dst_crs": "EPSG:4326", "resampling": "bilinear"}
"""An uncompressed output: the staging file is linked into place."""
OVERVIEWS = {"tool": "raster_convert", "driver": "GTiff", "overviews": [2, 4]}
"""Overviews: built on a copy of the staging file."""
COMPRESSED = {"tool": "raster_convert", "driver": "GTiff", "compression": "deflate"}
"""A compressed output: GDAL copies the staging file."""


def call(url: str, output: str, spec: dict[str, object], answer: dict[str, object]) -> None:
    async def go() -> None:
        args = {k: v for k, v in spec.items() if k != "tool"} | {"uri": "big.tif", "output": output}
        async with Client(url, sampling_callback=justify) as client:
            answer["result"] = await client.call_tool(str(spec["tool"]), args)

    asyncio.run(go())


def paused(cluster: Cluster) -> bool:
    """A process of a live node has stopped itself (state T)."""
    for node in cluster.workers:
        if node.poll() is not None:
            continue
        for proc in tree(node.pid):
            try:
                state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state == "T":
                return True
    return False


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("point", "spec"),
    [
        ("fan_in.publish", REPROJECT),
        ("fan_in.copied", OVERVIEWS),
        ("fan_in.before_rename", COMPRESSED),
        ("fan_in.after_rename", REPROJECT),
    ],
)
def test_a_node_killed_at_a_fan_in_step_costs_one_more_fan_in_and_changes_no_byte(
    tmp_path: Path, raster_dir: Path, point: str, spec: dict[str, object]
) -> None:
    with running_cluster(tmp_path, raster_dir, gateways=1, workers=1, env_extra=TILED) as cluster:
        url = cluster.gateways[0][0]
        calm: dict[str, object] = {}
        call(url, "calm.tif", spec, calm)
        assert not calm["result"].is_error, calm["result"].content  # type: ignore[attr-defined]

        parts = cluster.workspace / ".geogate" / "tiles"
        wait_for(lambda: not list(parts.glob("*/*")), what="the calm call's parts to go")  # they go after its outcome
        calm_node = cluster.workers[0]
        cluster.signal_node(calm_node, signal.SIGKILL)  # the node that may pause is the only one
        plain_env = cluster.env
        cluster.env = {**plain_env, "GEOGATE_FAULT_PAUSE_AT": point}
        victim = cluster.add_worker()
        cluster.env = plain_env

        faulted: dict[str, object] = {}
        thread = threading.Thread(target=call, args=(url, "faulted.tif", spec, faulted))
        thread.start()
        wait_for(lambda: paused(cluster), what=f"the fan-in to pause at {point}", timeout_s=90)
        cluster.signal_node(victim, signal.SIGKILL)
        cluster.add_worker()  # as an orchestrator restarts a dead node
        thread.join(timeout=120)

        answer = faulted["result"]
        assert not answer.is_error, answer.content  # type: ignore[attr-defined]
        output = cluster.workspace / "faulted.tif"
        assert sha256(output) == sha256(cluster.workspace / "calm.tif")
        assert answer.structured_content["output"]["sha256"] == sha256(output)  # type: ignore[attr-defined]
        parent = call_of(cluster, "faulted.tif")
        assert parent is not None
        types = [e.type for e in cluster.store().read_aggregate(call_aggregate(parent))]
        assert types.count("tool.fan_in_started") == 2
        assert "tool.redispatched" in types
        assert_every_call_ended_once(cluster, parent)
        assert not list(cluster.workspace.glob(".*.partial*"))
