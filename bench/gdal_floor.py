"""The floor under bench/gdal.py's rows: the same GDAL work without the gateway and without Celery, same run.

- `raster_info`: Geogate (make run's pools), a bare MCPServer whose `raster_info` tool runs Geogate's own job
  function in-process (the same SDK, no gateway, no queue), and gdal-mcp 1.1.3, interleaved; then a Celery hop
  alone (bench/floor.py: one task, one XADD, the client in XREAD) on a Redis of its own. Bare + hop is what any
  design with one Celery hop behind an MCP server pays.
- 8 reprojections on 1 vs 2 workers: Geogate's nodes, and the same job function in 1 vs 2 plain processes
  (fork, no Celery, no Redis), in alternating rounds.
Usage: python bench/gdal_floor.py [--info-calls 300] [--batches 4] [--only info|batch]
"""

import argparse
import asyncio
import multiprocessing
import multiprocessing.pool
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from _stack import ROOT, _wait_http, describe, geogate_stack, percentile
from floor import celery_alone
from gdal import BATCH, batch_ms, gdal_mcp_server, info_samples
from gdal_core import make_source, through_job

from geogate.cli.dev import Children, free_port, start_redis
from geogate.settings import Settings

BARE_INFO = """
import os, uvicorn
from pathlib import Path
from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from schemas.tools.raster import RasterInfoArgs, RasterInfoResult
from workers.jobkit.context import JobContext
from workers.tools.raster import raster_info as job
mcp = MCPServer("bare-gdal")
ROOTS = [Path(os.environ["WORKSPACE"])]
@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def raster_info(uri: str) -> RasterInfoResult:
    return job(RasterInfoArgs(uri=uri), JobContext(call_id="bare", roots=ROOTS))
uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
"""


@contextmanager
def bare_info_server(workspace: Path) -> Iterator[str]:
    """A bare MCPServer running Geogate's `raster_info` job in its own process; yields its MCP URL."""
    children, port = Children(), free_port()
    env = {**os.environ, "PORT": str(port), "PYTHONPATH": str(ROOT), "WORKSPACE": str(workspace)}
    try:
        children.spawn([sys.executable, "-c", BARE_INFO], env, log=workspace / "bare-info.log")
        _wait_http(f"http://127.0.0.1:{port}/mcp")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        children.stop()


async def info_rounds(urls: dict[str, str], uri: str, calls: int, rounds: int = 6) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in urls}
    for n in range(rounds):
        for name in urls if n % 2 == 0 else reversed(urls):
            samples[name] += await info_samples(urls[name], uri, calls // rounds, warmup=10)
    return samples


def celery_hop(calls: int) -> list[float]:
    children, workdir = Children(), Path(tempfile.mkdtemp(prefix="geogate-gdal-floor-"))
    try:
        return celery_alone(start_redis(Settings(data_dir=workdir), children), "prefork", calls, children, workdir)
    finally:
        children.stop()


def info_floor(workspace: Path, calls: int) -> None:
    uri = str(workspace / "src.tif")
    with ExitStack() as stack:
        urls = {
            "geogate": stack.enter_context(geogate_stack(workspace=workspace))[0],
            "bare MCPServer + job": stack.enter_context(bare_info_server(workspace)),
            "gdal-mcp 1.1.3": stack.enter_context(gdal_mcp_server(workspace)),
        }
        samples = asyncio.run(info_rounds(urls, uri, calls))
    hop = celery_hop(calls)
    theirs = statistics.median(samples["gdal-mcp 1.1.3"])
    print("raster_info, 2048×2048 float32 GeoTIFF, same SDK client, interleaved")
    for name, values in samples.items():
        print(f"  {name:<22} {describe(values)}  {statistics.median(values) / theirs:.2f}× gdal-mcp")
    print(f"  {'Celery hop alone':<22} {describe(hop)}")
    floor = statistics.median(samples["bare MCPServer + job"]) + statistics.median(hop)
    print(f"  floor (bare + one hop) p50 {floor:.2f} ms = {floor / theirs:.2f}× gdal-mcp (target ≤ 0.35×)")


def _jobs(args: tuple[str, list[str]]) -> None:
    root, names = args
    for name in names:
        through_job(Path(root), name)


def plain_ms(pool: multiprocessing.pool.Pool, root: Path, procs: int) -> float:
    """Wall time of `BATCH` job runs split over `procs` plain processes."""
    shares = [(str(root), [f"plain-{p}-{i}.tif" for i in range(BATCH // procs)]) for p in range(procs)]
    began = time.perf_counter()
    pool.map(_jobs, shares, chunksize=1)
    return (time.perf_counter() - began) * 1000


def batch_floor(workspace: Path, rounds: int) -> None:
    forked = multiprocessing.get_context("fork")
    samples: dict[str, list[float]] = {"geogate 1": [], "geogate 2": [], "plain 1": [], "plain 2": []}
    with ExitStack() as stack:
        urls = {n: stack.enter_context(geogate_stack(workers=n, workspace=workspace))[0] for n in (1, 2)}
        pools = {n: stack.enter_context(forked.Pool(n)) for n in (1, 2)}
        runs = {f"geogate {n}": (lambda n=n: asyncio.run(batch_ms(urls[n]))) for n in (1, 2)}
        runs |= {f"plain {n}": (lambda n=n: plain_ms(pools[n], workspace, n)) for n in (1, 2)}
        for run in runs.values():
            run()  # warm every process
        for n in range(rounds):
            for name in runs if n % 2 == 0 else reversed(runs):
                samples[name].append(runs[name]())
    print(f"batch of {BATCH} reprojections, wall time, interleaved rounds")
    for name, values in samples.items():
        p50, p99 = statistics.median(values), percentile(values, 99)
        print(f"  {name + ' worker(s)':<20} p50 {p50:8.1f} ms  p99 {p99:8.1f} ms")
    for kind in ("geogate", "plain"):
        one, two = statistics.median(samples[f"{kind} 1"]), statistics.median(samples[f"{kind} 2"])
        print(f"  {kind}: speed-up 1 → 2 workers {one / two:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--info-calls", type=int, default=300)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--only", choices=["info", "batch"], default=None)
    ns = parser.parse_args()
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  cpus: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="geogate-gdal-floor-") as tmp:
        workspace = Path(tmp)
        make_source(workspace / "src.tif")
        if ns.only != "batch":
            info_floor(workspace, ns.info_calls)
        if ns.only != "info":
            batch_floor(workspace, ns.batches)
    print(f"load at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
