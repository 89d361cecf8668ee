"""docker-compose.yml brought up for real (issue 34): images built, the cluster started under podman, driven through
the SDK client on every gateway, a worker container killed and a gateway stopped mid-load, the log checked, and
`down` leaving nothing behind. The tests run in this order on one cluster; the last one takes it down.
"""

import hashlib
import io
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np
import pytest
import rasterio
from rasterio.enums import Resampling
from rasterio.io import DatasetReader
from rasterio.warp import reproject

from geogate.calls.projections.running import RunningEntry
from schemas.events import ToolRedispatched
from schemas.ids import call_aggregate
from tests.cluster.conftest import write_raster
from tests.cluster.load import Answer, Load, assert_log_is_whole, connect, during_faults, outcome_at_ms
from tests.compose.conftest import (
    BUCKET,
    IMAGE,
    PREFIX,
    PROJECT,
    ROOT,
    S3_DB,
    S3_KEY_ID,
    S3_SECRET,
    TOKEN,
    Compose,
    Container,
    http,
    leased,
    podman,
    report,
)
from tests.support import JUSTIFICATION, justify, wait_for

pytestmark = [pytest.mark.compose, pytest.mark.timeout(1800)]

CALLS = 20
JSON_HANDLER = "import json\njson.loads(json.dumps({'width': tool_output['width']}))['width'] * 2"
"""A handler that needs the standard library beyond a minimal interpreter's."""


def reproject_args(output: str) -> dict[str, object]:
    return {"uri": "dem.tif", "output": output, "dst_crs": "EPSG:4326", "resampling": "bilinear", "overwrite": True}


async def _drive(url: str, output: str) -> dict[str, Any]:
    """On one gateway: the tools, `raster_info` with a Python handler that imports `json` (the sandbox in the worker's
    container, on the image's interpreter), and a gated `raster_reproject`: the preflight hint, the justifications
    persisted, then the call itself."""
    async with connect(url, TOKEN) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        info = await client.call_tool("raster_info", {"uri": "dem.tif"})
        handled = await client.call_tool("raster_info", {"uri": "dem.tif", "result_handler": {"script": JSON_HANDLER}})
        gate = await client.call_tool("raster_reproject", reproject_args(output))
        required = (gate.structured_content or {}).get("preflight", {}).get("required", [])
        items = [{"hash": r["hash"], "domain": r["domain"], "justification": JUSTIFICATION} for r in required]
        if items:
            saved = await client.call_tool("persist_justifications", {"items": items})
            assert not saved.is_error, saved.content
        done = await client.call_tool("raster_reproject", reproject_args(output))
    return {"tools": tools, "info": info, "handled": handled, "gate": gate, "required": required, "done": done}


def test_every_gateway_lists_tools_and_runs_info_a_sandboxed_handler_and_a_justified_reproject(
    compose: Compose,
) -> None:
    urls = compose.gateway_urls()
    assert len(urls) == 2
    seen = [anyio.run(_drive, url, f"warped-{n}.tif") for n, url in enumerate(urls)]

    for n, run in enumerate(seen):
        assert {"raster_info", "raster_reproject", "persist_justifications"} <= run["tools"]
        assert not run["info"].is_error and run["info"].structured_content["width"] == 256, run["info"].content
        assert not run["handled"].is_error, run["handled"].content
        assert run["handled"].structured_content["result"] == 512
        assert run["handled"].meta["io.geogate/result_handler"]["isolation"] == "bwrap"
        assert not run["done"].is_error, run["done"].content
        written = compose.workspace() / f"warped-{n}.tif"  # the volume every gateway and worker shares
        expected = run["done"].structured_content["output"]["sha256"]
        assert hashlib.sha256(written.read_bytes()).hexdigest() == expected
        with rasterio.open(written) as warped:
            assert warped.crs.to_epsg() == 4326
    # the first gateway gated the call; the justifications it persisted are the second one's cache hit
    assert seen[0]["gate"].is_error and {r["domain"] for r in seen[0]["required"]} == {"crs_datum", "resampling"}
    assert not seen[1]["gate"].is_error and seen[1]["required"] == []


def test_ops_and_metrics_answer_on_every_gateway_with_the_admin_token(compose: Compose) -> None:
    with http() as client:
        for base in compose.gateway_urls(""):
            assert client.get(f"{base}/ops/api/summary", headers={"Authorization": ""}).status_code == 401
            assert client.get(f"{base}/ops").status_code == 200
            assert client.get(f"{base}/ops/static/vendor/htmx.min.js").status_code == 200  # the image's build stage
            assert isinstance(client.get(f"{base}/ops/api/summary").json(), dict)
            metrics = client.get(f"{base}/metrics")
            assert metrics.status_code == 200 and "geogate_events" in metrics.text


BUCKET_WARP = {"uri": f"s3://{BUCKET}/{PREFIX}/in/dem.tif", "output": "out/dem-4326.tif", "dst_crs": "EPSG:4326"}


async def _warp_in_bucket(url: str) -> Any:
    """`raster_reproject` from one object of the bucket to another, through the bucket-only cell's gateway; the SDK
    client answers the preflight gate by sampling."""
    async with connect(url, TOKEN, sampling_callback=justify) as client:
        return await client.call_tool("raster_reproject", BUCKET_WARP | {"resampling": "bilinear"})


def warped(source: DatasetReader, grid: DatasetReader) -> np.ndarray:
    """`source`'s band warped by rasterio in this process onto `grid`, as the tool was asked to."""
    expected = np.zeros((grid.height, grid.width), dtype="float32")
    reproject(
        source.read(1), expected, src_transform=source.transform, src_crs=source.crs, dst_transform=grid.transform,
        dst_crs=grid.crs, resampling=Resampling.bilinear,
    )  # fmt: skip
    return expected


def test_a_worker_without_the_workspace_volume_reprojects_a_raster_through_the_bucket(compose: Compose) -> None:
    """The `s3` profile's cell: a raster uploaded to the bucket is reprojected through its gateway by its worker,
    which mounts nothing but its secret and writes nothing on its own disk; the output object equals rasterio's
    own warp onto the same grid, and the store's keys show nowhere in the container's environment or log."""
    s3, source = compose.s3(), compose.workdir / "bucket-dem.tif"
    write_raster(source, 256)
    s3.upload_file(str(source), BUCKET, f"{PREFIX}/in/dem.tif")
    [url] = compose.gateway_urls(service="gateway-s3")
    [worker] = compose.containers("worker-gdal-s3")
    start = time.monotonic()

    done = anyio.run(_warp_in_bucket, url)

    assert not done.is_error, done.content
    assert done.structured_content["output"]["uri"] == f"s3://{BUCKET}/{PREFIX}/out/dem-4326.tif"
    assert done.meta["io.geogate/call"]["worker"].split(":")[0] == worker.hostname
    stored = s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/out/dem-4326.tif")
    body = stored["Body"].read()
    assert (
        hashlib.sha256(body).hexdigest() == done.structured_content["output"]["sha256"] == stored["Metadata"]["sha256"]
    )
    with rasterio.open(io.BytesIO(body)) as out, rasterio.open(source) as src:
        assert out.crs.to_epsg() == 4326
        np.testing.assert_allclose(out.read(1), warped(src, out), atol=1e-5)
    mounts = json.loads(podman("inspect", "--format", "{{json .Mounts}}", worker.name).stdout)
    assert "/run/secrets/geogate_s3" in {m["Destination"] for m in mounts}
    assert not [m for m in mounts if m["Type"] == "volume" or m["Destination"].startswith("/data")], mounts
    assert podman("exec", worker.name, "ls", "-A", "/data").stdout.strip() == ""
    shown = (
        podman("inspect", "--format", "{{json .Config.Env}}", worker.name).stdout + podman("logs", worker.name).stderr
    )
    assert S3_SECRET not in shown and S3_KEY_ID not in shown
    replay = compose.geogate("replay", "--check", db=S3_DB)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    figures = {"call_s": round(time.monotonic() - start, 2), "duration_ms": done.meta["io.geogate/call"]["duration_ms"]}
    report(
        "bucket-only worker", figures | {"output_bytes": len(body), "mounts": sorted(m["Destination"] for m in mounts)}
    )


def test_workers_run_unprivileged_on_the_suites_python_and_own_the_workspace(compose: Compose) -> None:
    """Every Geogate process runs as the image's user, the sandbox's interpreter is the image's own (Debian's
    python3, its whole standard library), and the workspace volume is that user's."""
    workers = [c for c in compose.containers() if c.service.startswith("worker-")]
    for worker in workers:
        users = podman("top", worker.name, "user").stdout.split()[1:]  # the init, the role, its pool and sandbox
        assert len(users) >= 2 and set(users) == {"geogate"}, (worker.name, users)
    probe = "from workers.sandbox.isolation import default_python; print(default_python())"
    chosen = podman("exec", workers[0].name, "python", "-c", probe).stdout.strip()
    system = podman("exec", workers[0].name, "readlink", "-f", "/usr/bin/python3").stdout.strip()
    assert chosen == system
    assert compose.workspace().stat().st_uid == int(podman("exec", workers[0].name, "id", "-u").stdout)


def test_the_project_installs_and_its_unit_tests_import_on_the_images_python(compose: Compose) -> None:
    """`pip install` of the project with its test extra resolves on the suite's Python, `pip check` is clean, and
    every unit test module imports there (collected, not run: the image has no redis-server or gdal-bin)."""
    script = (
        "python -c 'import sys; print(\"python\", *sys.version_info[:3])'"
        ' && pip install -q --no-cache-dir --root-user-action=ignore ".[test]" && pip check'
        " && python -m pytest --collect-only -q tests/unit"
    )
    mount = f"{ROOT / 'tests'}:/app/tests:ro"
    argv = ["run", "--rm", "--user", "0", "-w", "/app", "-v", mount, "--entrypoint", "sh", IMAGE, "-c", script]
    done = podman(*argv, check=False)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    version = tuple(int(part) for part in lines[0].split()[1:])
    collected = next(line for line in reversed(lines) if " collected" in line)
    assert "error" not in collected, collected
    assert version >= (3, 13)  # the suite's, newer than the host's 3.11 that `make test` runs on
    report("python in the image", {"python": ".".join(map(str, version)), "unit_tests": collected})


def in_flight(compose: Compose) -> list[RunningEntry]:
    store = compose.store()
    return [RunningEntry.parse(k, v) for k, v in store.redis.hgetall(store.live.running()).items()]


def running_on(compose: Compose, hosts: set[str]) -> list[RunningEntry]:
    return [e for e in in_flight(compose) if e.stage == "tool" and e.lease.split(":")[0] in hosts]


def stats_load(urls: Callable[[], list[str]], concurrency: int) -> Load:
    return Load(urls, "raster_stats", {"uri": "big.tif"}, CALLS, concurrency, token=TOKEN)


def assert_whole(compose: Compose, answers: list[Answer]) -> None:
    """Every call answered without error, one outcome and one request each, and `geogate replay --check` clean,
    run in a container of the image against the cluster's Redis."""
    assert_log_is_whole(compose.store(), {}, answers, CALLS, replay=lambda: compose.geogate("replay", "--check"))
    assert all(a.error is None for a in answers), [a.error for a in answers if a.error]


def test_a_worker_container_killed_mid_load_is_restarted_by_its_policy_and_every_call_answered_once(
    compose: Compose,
) -> None:
    workers = {c.hostname: c for c in compose.containers("worker-gdal")}
    assert len(workers) == 2
    kill: dict[str, Any] = {}

    def fault(done: threading.Event) -> None:
        wait_for(lambda: bool(running_on(compose, set(workers))) or done.is_set(), what="a call on a gdal worker")
        runs = running_on(compose, set(workers))
        if not runs:
            return
        victim: Container = workers[runs[0].lease.split(":")[0]]
        pid = victim.pid()
        kill.update(lease=runs[0].lease, victim=victim, held=[e.call_id for e in runs if e.lease == runs[0].lease])
        kill["at_ms"] = time.time() * 1000
        os.kill(pid, signal.SIGKILL)  # the container's main process (its init), as `kill -9` from the host
        # nothing here starts it again: the compose file's `restart: unless-stopped` must
        wait_for(lambda: victim.running() and victim.pid() not in (0, pid), what="the restart", timeout_s=120)
        kill["restarted_ms"] = time.time() * 1000

    answers = during_faults(fault, stats_load(compose.gateway_urls, concurrency=4))

    assert kill, "the load ended before the fault"
    assert_whole(compose, answers)
    store = compose.store()
    recovery = []
    for call_id in kill["held"]:
        events = store.read_aggregate(call_aggregate(call_id))
        lost = [e for e in events if isinstance(e.data, ToolRedispatched) and e.data.lost_lease == kill["lease"]]
        finished = any(e.type == "tool.succeeded" and e.ts.timestamp() * 1000 < kill["at_ms"] for e in events)
        assert lost or finished, f"call {call_id} held by the killed container was not re-dispatched"
        recovery.append(outcome_at_ms(store, call_id) - kill["at_ms"])
    wait_for(lambda: kill["victim"].hostname in leased(compose), what="the restarted worker's lease", timeout_s=60)
    figures = {"calls": CALLS, "held_by_the_killed_container": len(kill["held"])}
    figures |= {"container_restarted_s": round((kill["restarted_ms"] - kill["at_ms"]) / 1000, 1)}
    report("worker kill -9", figures | {"slowest_held_call_answered_s": round(max(recovery) / 1000, 1)})


def test_a_gateway_stopped_with_calls_in_flight_loses_none_and_its_clients_retry_through_the_other(
    compose: Compose,
) -> None:
    first = compose.containers("gateway")[0]
    first_url = f"http://127.0.0.1:{first.host_port(8000)}/mcp"
    others = [u for u in compose.gateway_urls() if u != first_url]
    stop: dict[str, float] = {}

    def live() -> list[str]:  # every call's first try goes to the gateway that is stopped
        return others if "begun_ms" in stop else [first_url, *others]

    def fault(done: threading.Event) -> None:
        wait_for(lambda: len(in_flight(compose)) >= 2, what="calls in flight")
        stop["begun_ms"] = time.time() * 1000
        compose_stop(first)
        stop["stopped_ms"] = time.time() * 1000

    answers = during_faults(fault, stats_load(live, concurrency=6))

    assert stop, "the load ended before the fault"
    assert_whole(compose, answers)
    retried = [a for a in answers if a.tries > 1]
    assert retried, "no call had to go through the other gateway"
    figures = {"calls": CALLS, "retried_through_the_other": len(retried)}
    figures |= {"stop_s": round((stop["stopped_ms"] - stop["begun_ms"]) / 1000, 1)}
    slowest = max(a.at_ms for a in retried) - stop["begun_ms"]
    figures |= {"faults_seen_by_retried_calls": sorted({f for a in retried for f in a.faults})}
    report("gateway stop", figures | {"slowest_retried_call_answered_s": round(slowest / 1000, 1)})
    first_start(first)


def compose_stop(container: Container) -> None:
    """`podman stop` with the compose file's grace period (`stop_grace_period: 60s`), as `compose stop` sends it."""
    podman("stop", "-t", "60", container.name)


def first_start(container: Container) -> None:
    podman("start", container.name)
    wait_for(container.healthy, what="the stopped gateway to answer again", timeout_s=120, interval_s=1)


def test_down_stops_and_removes_every_container_volume_and_network_it_made(compose: Compose) -> None:
    names = [c.name for c in compose.containers()]
    running_until: dict[str, float] = {}
    start = time.monotonic()

    def watch(done: threading.Event) -> None:  # when each container was last seen running, for the report
        while not done.wait(0.5):
            seen = round(time.monotonic() - start, 1)
            for name in set(podman("ps", "--format", "{{.Names}}").stdout.split()) & set(names):
                running_until[name.removeprefix(f"{PROJECT}_")] = seen

    done = threading.Event()
    watcher = threading.Thread(target=watch, args=(done,))
    watcher.start()
    try:
        compose.run("down", "-v")
    finally:
        done.set()
        watcher.join()
    report("down", {"down_s": round(time.monotonic() - start, 1), "last_seen_running_s": running_until})
    assert compose.leftovers() == {"containers": [], "volumes": [], "networks": []}
