"""GDAL bench: raster_info vs gdal-mcp 1.1.3, raster_reproject vs rasterio direct, batch speed-up 1 → 2 workers.

All MCP calls go through the same SDK client over Streamable HTTP, which negotiates each server's newest era
(gdal-mcp's FastMCP 2 stops at 2025-11-25; Geogate is also measured in that era). gdal-mcp runs from a venv of its
own under .bench/gdal-mcp (created with pip on first use). Geogate runs as `make run` does (`geogate dev`'s pools);
the batch compares `--workers 1` and `--workers 2`, both stacks up and used in alternation.
Usage: python bench/gdal.py [--info-calls 200] [--reprojects 9] [--batches 3]
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
from contextlib import ExitStack, contextmanager
from pathlib import Path

from _report import Row, load, show
from _stack import ROOT, _wait_http, geogate_stack, percentile
from gdal_core import direct, make_source
from hop import hop_stack
from mcp import Client
from mcp.types import CreateMessageResult, TextContent

from geogate.cli.dev import Children, free_port
from geogate.process.lifetime import dies_with_this_process

GDAL_MCP = "gdal-mcp==1.1.3"
GDAL_MCP_VENV = ROOT / ".bench" / "gdal-mcp"
MODE = "auto"
"""The client's era negotiation: each server gets the newest era it speaks."""
IN_PROCESS = "the same warp with rasterio in the bench"
HOP = "the same job behind one Celery hop (bench/hop.py)"
BATCH = 8
JUSTIFICATION = {
    "intent": "a bench warp onto a web-map grid",
    "alternatives": [{"method": "keep EPSG:4326", "why_not": "the bench measures a reprojection"}],
    "choice": {"method": "EPSG:3857, bilinear", "rationale": "continuous data on a web map", "tradeoffs": "area"},
    "confidence": "high",
}


def ensure_gdal_mcp() -> Path:
    """The `gdal` entry point of gdal-mcp 1.1.3 in its own venv, installed with pip on first use."""
    gdal, done = GDAL_MCP_VENV / "bin" / "gdal", GDAL_MCP_VENV / ".installed"
    if done.exists() and gdal.exists():
        return gdal
    GDAL_MCP_VENV.parent.mkdir(parents=True, exist_ok=True)
    log = GDAL_MCP_VENV.parent / "gdal-mcp-install.log"
    print(f"installing {GDAL_MCP} into {GDAL_MCP_VENV} (once; pip's output in {log})", flush=True)
    with log.open("w") as out:
        for argv in (
            [sys.executable, "-m", "venv", str(GDAL_MCP_VENV)],
            [str(GDAL_MCP_VENV / "bin" / "pip"), "install", GDAL_MCP],
        ):
            if subprocess.run(
                argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=dies_with_this_process()
            ).returncode:
                raise SystemExit(f"could not install {GDAL_MCP}: see {log}")
    done.touch()
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


async def info_interleaved(
    ours: str, theirs: str, hop: str, uri: str, calls: int, rounds: int = 5
) -> dict[str, list[float]]:
    """Alternate blocks of `raster_info` calls on every server so that machine noise hits all alike."""
    samples: dict[str, list[float]] = {"ours": [], "ours_legacy": [], "theirs": [], "hop": []}
    for _ in range(rounds):
        samples["ours"] += await info_samples(ours, uri, calls // rounds)
        samples["ours_legacy"] += await info_samples(ours, uri, calls // rounds, mode="legacy")
        samples["theirs"] += await info_samples(theirs, uri, calls // rounds)
        samples["hop"] += await info_samples(hop, uri, calls // rounds)
    return samples


async def justify(context: object, params: object) -> CreateMessageResult:
    """Answer Geogate's preflight gate once (sampling); later reprojections hit the justification cache."""
    text = TextContent(type="text", text=json.dumps(JUSTIFICATION))
    return CreateMessageResult(role="assistant", content=text, model="scripted", stop_reason="endTurn")


def geogate_client(url: str) -> Client:
    return Client(url, mode=MODE, sampling_callback=justify)


def reproject_args(output: str) -> dict[str, object]:
    return {"uri": "src.tif", "output": output, "dst_crs": "EPSG:3857", "resampling": "bilinear", "overwrite": True}


async def reproject_vs_direct(
    url: str, hop: str, workspace: Path, runs: int
) -> tuple[list[float], list[float], list[float]]:
    """End-to-end `raster_reproject` through Geogate, through one hop, and the same warp here, alternately."""
    ours: list[float] = []
    theirs: list[float] = []
    floor: list[float] = []
    async with geogate_client(url) as client, Client(hop) as hop_client:
        for n in range(runs + 1):
            ms = await timed(lambda: client.call_tool("raster_reproject", reproject_args("geogate.tif")))
            hop_ms = await timed(lambda: hop_client.call_tool("raster_reproject", reproject_args("hop.tif")))
            began = time.perf_counter()
            direct(workspace / "src.tif", workspace / "direct.tif")
            if n:  # the first round warms GDAL's caches and PROJ's database on every side
                ours.append(ms)
                floor.append(hop_ms)
                theirs.append((time.perf_counter() - began) * 1000)
    return ours, theirs, floor


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


def batches_interleaved(workspace: Path, repeats: int) -> dict[str, list[float]]:
    """Wall times of batches on `geogate dev --workers 1` and `--workers 2` stacks and on hop stacks of 1 and 2
    workers (the floor), all up, in alternation."""
    with ExitStack() as stack:
        urls = {f"geogate {n}": stack.enter_context(geogate_stack(workers=n, workspace=workspace))[0] for n in (1, 2)}
        urls |= {f"hop {n}": stack.enter_context(hop_stack(workers=n, workspace=workspace)) for n in (1, 2)}
        for url in urls.values():
            asyncio.run(batch_ms(url))  # warm every worker process
        samples: dict[str, list[float]] = {name: [] for name in urls}
        for n in range(repeats):
            for name in urls if n % 2 == 0 else reversed(urls):
                samples[name].append(asyncio.run(batch_ms(urls[name])))
    return samples


def line(name: str, values: list[float]) -> str:
    p50, p99 = statistics.median(values), percentile(values, 99)
    return f"  {name:<28} p50 {p50:9.2f} ms   p99 {p99:9.2f} ms  (n={len(values)})"


def report_info(ours: list[float], ours_legacy: list[float], theirs: list[float], hop: list[float]) -> Row:
    print("raster_info, 2048×2048 float32 GeoTIFF, same SDK client over Streamable HTTP")
    print(line("gdal-mcp 1.1.3 (2025-11-25)", theirs))
    print(line("geogate (2026-07-28)", ours))
    print(line("geogate (2025-11-25)", ours_legacy))
    print(line("the same job behind one hop", hop))
    return ratio_row("raster_info p50 vs gdal-mcp 1.1.3", ours, theirs, hop, 0.35, "gdal-mcp 1.1.3")


def report_reproject(ours: list[float], theirs: list[float], hop: list[float]) -> Row:
    print("raster_reproject 2048×2048 float32 4326→3857 bilinear")
    print(line("rasterio direct (in bench)", theirs))
    print(line("geogate end to end", ours))
    print(line("the same job behind one hop", hop))
    return ratio_row("raster_reproject 2048² end to end, p50", ours, theirs, hop, 1.10, IN_PROCESS)


def ratio_row(measure: str, ours: list[float], theirs: list[float], hop: list[float], target: float, base: str) -> Row:
    """A p50 ratio row against `theirs`, with the same ratio through one hop as its floor."""
    p50s = statistics.median(ours), statistics.median(theirs)
    floor = statistics.median(hop) / p50s[1]
    return Row(measure, *p50s, "ms", "ratio", target, baseline_name=base, floor=floor, floor_name=HOP)


def report_batch(samples: dict[str, list[float]]) -> Row:
    print(f"batch of {BATCH} reprojections (same raster), wall time")
    print(line("geogate dev --workers 1", samples["geogate 1"]))
    print(line("geogate dev --workers 2", samples["geogate 2"]))
    print(line("one hop, 1 worker", samples["hop 1"]))
    print(line("one hop, 2 workers", samples["hop 2"]))
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    return Row(
        f"{BATCH} reprojections, 2 workers vs 1",
        p50["geogate 2"],
        p50["geogate 1"],
        "ms",
        "speed-up",
        1.85,
        at_most=False,
        baseline_name="1 worker",
        floor=p50["hop 1"] / p50["hop 2"],
        floor_name="the same batch behind one hop, 1 vs 2 Celery workers",
    )


def measure(info_calls: int = 200, reprojects: int = 9, batches: int = 3) -> list[Row]:
    """The table's three GDAL rows, on one 2048² GeoTIFF in a fresh workspace."""
    with tempfile.TemporaryDirectory(prefix="geogate-gdal-bench-") as tmp:
        workspace = Path(tmp)
        make_source(workspace / "src.tif")
        with ExitStack() as stack:
            urls = stack.enter_context(geogate_stack(workers=2, workspace=workspace))
            theirs = stack.enter_context(gdal_mcp_server(workspace))
            hop = stack.enter_context(hop_stack(workers=2, workspace=workspace))
            uri = str(workspace / "src.tif")
            info = report_info(**asyncio.run(info_interleaved(urls[0], theirs, hop, uri, info_calls)))
            reproject = report_reproject(*asyncio.run(reproject_vs_direct(urls[0], hop, workspace, reprojects)))
        batch = report_batch(batches_interleaved(workspace, batches))
    return [info, reproject, batch]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--info-calls", type=int, default=200)
    parser.add_argument("--reprojects", type=int, default=9)
    parser.add_argument("--batches", type=int, default=3)
    ns = parser.parse_args()
    print(load())
    show("GDAL", measure(ns.info_calls, ns.reprojects, ns.batches))


if __name__ == "__main__":
    sys.exit(main())
