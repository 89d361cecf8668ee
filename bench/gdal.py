"""GDAL bench: raster_info vs gdal-mcp 1.1.3, raster_reproject vs rasterio direct, batch speed-up 1 → 2 workers.

All MCP calls go through the same SDK client over Streamable HTTP, which negotiates each server's newest era
(gdal-mcp's FastMCP 2 stops at 2025-11-25; Geogate is also measured in that era). gdal-mcp runs from a venv of its
own under .bench/gdal-mcp (created on first use). Usage: python bench/gdal.py [--info-calls 200]
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from _stack import ROOT, _wait_http, geogate_stack, percentile
from gdal_core import direct, make_source
from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from gateway.dev import Children, free_port

GDAL_MCP = "gdal-mcp==1.1.3"
GDAL_MCP_VENV = ROOT / ".bench" / "gdal-mcp"
MODE = "auto"
"""The client's era negotiation: each server gets the newest era it speaks."""
BATCH = 8
JUSTIFICATION = {
    "intent": "a bench warp onto a web-map grid",
    "alternatives": [{"method": "keep EPSG:4326", "why_not": "the bench measures a reprojection"}],
    "choice": {"method": "EPSG:3857, bilinear", "rationale": "continuous data on a web map", "tradeoffs": "area"},
    "confidence": "high",
}


def ensure_gdal_mcp() -> Path:
    """The `gdal` entry point of gdal-mcp 1.1.3 in its own venv, installed with pip on first use."""
    gdal = GDAL_MCP_VENV / "bin" / "gdal"
    if not gdal.exists():
        subprocess.run(["python3.11", "-m", "venv", str(GDAL_MCP_VENV)], check=True)
        subprocess.run([str(GDAL_MCP_VENV / "bin" / "pip"), "install", "-q", GDAL_MCP], check=True)
    return gdal


@contextmanager
def gdal_mcp_server(workspace: Path) -> Iterator[str]:
    """gdal-mcp over Streamable HTTP on a free port, scoped to `workspace`; yields its MCP URL."""
    children, port = Children(), free_port()
    argv = [str(ensure_gdal_mcp()), "--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "GDAL_MCP_WORKSPACES": str(workspace), "FASTMCP_SHOW_CLI_BANNER": "false"}
    try:
        children.spawn([*argv, "--log-level", "WARNING"], env, log=workspace / "gdal-mcp.log")
        _wait_http(f"http://127.0.0.1:{port}/mcp", timeout_s=60)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        children.stop()


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    began = time.perf_counter()
    result = await call()
    elapsed = (time.perf_counter() - began) * 1000
    if getattr(result, "is_error", False):
        raise SystemExit(f"call failed: {result.content}")  # type: ignore[attr-defined]
    return elapsed


async def info_samples(url: str, uri: str, calls: int, warmup: int = 20, mode: str = MODE) -> list[float]:
    async with Client(url, mode=mode) as client:
        samples = [await timed(lambda: client.call_tool("raster_info", {"uri": uri})) for _ in range(warmup + calls)]
    return samples[warmup:]


async def info_interleaved(ours: str, theirs: str, uri: str, calls: int, rounds: int = 5) -> dict[str, list[float]]:
    """Alternate blocks of `raster_info` calls on both servers so that machine noise hits all alike."""
    samples: dict[str, list[float]] = {"ours": [], "ours_legacy": [], "theirs": []}
    for _ in range(rounds):
        samples["ours"] += await info_samples(ours, uri, calls // rounds)
        samples["ours_legacy"] += await info_samples(ours, uri, calls // rounds, mode="legacy")
        samples["theirs"] += await info_samples(theirs, uri, calls // rounds)
    return samples


async def justify(context: object, params: object) -> CreateMessageResult:
    """Answer Geogate's preflight gate once (sampling); later reprojections hit the justification cache."""
    text = TextContent(type="text", text=json.dumps(JUSTIFICATION))
    return CreateMessageResult(role="assistant", content=text, model="scripted", stop_reason="endTurn")


def geogate_client(url: str) -> Client:
    return Client(url, mode=MODE, sampling_callback=justify)


def reproject_args(output: str) -> dict[str, object]:
    return {"uri": "src.tif", "output": output, "dst_crs": "EPSG:3857", "resampling": "bilinear", "overwrite": True}


async def reproject_vs_direct(url: str, workspace: Path, runs: int) -> tuple[list[float], list[float]]:
    """End-to-end `raster_reproject` through Geogate and the same warp with rasterio here, alternately."""
    ours: list[float] = []
    theirs: list[float] = []
    async with geogate_client(url) as client:
        for n in range(runs + 1):
            ms = await timed(lambda: client.call_tool("raster_reproject", reproject_args("geogate.tif")))
            began = time.perf_counter()
            direct(workspace / "src.tif", workspace / "direct.tif")
            if n:  # the first round warms GDAL's caches and PROJ's database on both sides
                ours.append(ms)
                theirs.append((time.perf_counter() - began) * 1000)
    return ours, theirs


async def batch_ms(url: str) -> float:
    """Wall time of `BATCH` concurrent reprojections (one client, concurrent calls)."""
    async with geogate_client(url) as client:

        async def one(n: int) -> object:
            return await client.call_tool("raster_reproject", reproject_args(f"batch-{n}.tif"))

        began = time.perf_counter()
        results = await asyncio.gather(*(one(n) for n in range(BATCH)))
        elapsed = (time.perf_counter() - began) * 1000
    if any(r.is_error for r in results):  # type: ignore[attr-defined]
        raise SystemExit("a batch reprojection failed")
    return elapsed


def batch_with(workers: int, workspace: Path, repeats: int) -> list[float]:
    with geogate_stack(workers=workers, workspace=workspace) as urls:
        asyncio.run(batch_ms(urls[0]))  # warm every worker process
        return [asyncio.run(batch_ms(urls[0])) for _ in range(repeats)]


def line(name: str, values: list[float]) -> str:
    p50, p99 = statistics.median(values), percentile(values, 99)
    return f"  {name:<28} p50 {p50:9.2f} ms   p99 {p99:9.2f} ms  (n={len(values)})"


def report_info(ours: list[float], ours_legacy: list[float], theirs: list[float]) -> None:
    print("raster_info, 2048×2048 float32 GeoTIFF, same SDK client over Streamable HTTP")
    print(line("gdal-mcp 1.1.3 (2025-11-25)", theirs))
    print(line("geogate (2026-07-28)", ours))
    print(line("geogate (2025-11-25)", ours_legacy))
    print(f"  ratio p50 {statistics.median(ours) / statistics.median(theirs):.2f}×   (target ≤ 0.3×)")


def report_reproject(ours: list[float], theirs: list[float]) -> None:
    print("raster_reproject 2048×2048 float32 4326→3857 bilinear")
    print(line("rasterio direct (in bench)", theirs))
    print(line("geogate end to end", ours))
    print(f"  ratio p50 {statistics.median(ours) / statistics.median(theirs):.2f}×   (target ≤ 1.1×)")


def report_batch(one: list[float], two: list[float]) -> None:
    print(f"batch of {BATCH} reprojections (same raster), wall time")
    print(line("1 worker process", one))
    print(line("2 worker processes", two))
    print(f"  speed-up p50 {statistics.median(one) / statistics.median(two):.2f}×   (target ≥ 1.8×)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--info-calls", type=int, default=200)
    parser.add_argument("--reprojects", type=int, default=9)
    parser.add_argument("--batches", type=int, default=3)
    ns = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}  cpus: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="geogate-gdal-bench-") as tmp:
        workspace = Path(tmp)
        make_source(workspace / "src.tif")
        with geogate_stack(workers=2, workspace=workspace) as urls, gdal_mcp_server(workspace) as theirs:
            report_info(**asyncio.run(info_interleaved(urls[0], theirs, str(workspace / "src.tif"), ns.info_calls)))
            report_reproject(*asyncio.run(reproject_vs_direct(urls[0], workspace, ns.reprojects)))
        report_batch(batch_with(1, workspace, ns.batches), batch_with(2, workspace, ns.batches))


if __name__ == "__main__":
    sys.exit(main())
