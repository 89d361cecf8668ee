"""Tiles bench: one large reprojection and one large statistics call spread over the workers.

Baselines run in this process in the same run: rasterio's warp with one thread and with `num_threads=2` (GDAL's
own multithreaded warp on the same cores). Geogate runs as `make run` does (`geogate dev`'s pools, 2 worker
processes) with tiling on (the defaults), with tiling off (`GEOGATE_TILE_MIN_PIXELS` above the raster), and with
one worker process (for the parallel efficiency). All stacks are up together and used in alternation. The cost
model's inputs (plan and fan-out, one tile, fan-in wait, assembly) are read off the log of the tiled calls.
Usage: python bench/tiles.py [--runs 3] [--size 8192] [--stats-size 16384]
"""

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import rasterio
import redis
from _report import Row, show
from _stack import geogate_stack
from affine import Affine
from mcp import Client
from mcp.types import CreateMessageResult, TextContent
from rasterio.enums import Resampling
from rasterio.warp import calculate_default_transform, reproject
from rasterio.windows import Window
from tiles_model import TiledCall, knee, predict, scaled, simulate

from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.events import ToolFanInStarted, ToolFannedOut, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate
from schemas.tools.tiling import tile_call_id

DST_CRS = "EPSG:3857"
OFF = {"GEOGATE_TILE_MIN_PIXELS": str(1 << 40)}
JUSTIFICATION = {
    "intent": "a bench warp onto a web-map grid",
    "alternatives": [{"method": "keep EPSG:4326", "why_not": "the bench measures a reprojection"}],
    "choice": {"method": "EPSG:3857, bilinear", "rationale": "continuous data on a web map", "tradeoffs": "area"},
    "confidence": "high",
}


def make_source(path: Path, size: int) -> None:
    """A `size`² float32 GeoTIFF in EPSG:4326 with a smooth pattern (tiled 256, uncompressed), written by strips."""
    profile = {"driver": "GTiff", "width": size, "height": size, "count": 1, "dtype": "float32", "crs": "EPSG:4326"}
    profile |= {"transform": Affine(8.0 / size, 0, 10.0, 0, -8.0 / size, 50.0), "tiled": True}
    with rasterio.open(path, "w", blockxsize=256, blockysize=256, **profile) as dst:
        for top in range(0, size, 1024):
            rows, cols = np.mgrid[top : top + 1024, 0:size].astype("float32")
            data = np.sin(rows / 97.0) * np.cos(cols / 61.0) * 1000.0
            dst.write(data[np.newaxis], window=Window(0, top, size, 1024))


def rasterio_warp(src_path: Path, dst_path: Path, threads: int) -> None:
    """The warp as a rasterio user writes it: default grid, one `reproject` call per band, `num_threads`."""
    with rasterio.open(src_path) as src:
        transform, width, height = calculate_default_transform(src.crs, DST_CRS, src.width, src.height, *src.bounds)
        profile = src.profile | {"crs": DST_CRS, "transform": transform, "width": width, "height": height}
        with rasterio.open(dst_path, "w", **profile) as dst:
            for band in range(1, src.count + 1):
                reproject(
                    rasterio.band(src, band), rasterio.band(dst, band), resampling=Resampling.bilinear,
                    num_threads=threads,
                )  # fmt: skip


async def _justify(context: object, params: object) -> CreateMessageResult:
    text = TextContent(type="text", text=json.dumps(JUSTIFICATION))
    return CreateMessageResult(role="assistant", content=text, model="scripted", stop_reason="endTurn")


class Session:
    """One MCP client session held open across calls, as a host holds one: opened once and its tools listed once,
    then each call timed alone.

    A session opened per call would time the SDK client's own set-up inside the call: its first validated result
    lists the server's tools (`ClientSession.validate_tool_result` calls `list_tools` for a tool it has not seen)
    and compiles the result schema's validator, which costs more than a `ping` on a session that has listed its
    tools (docs/tiles.md has the figures). The session lives on its own event loop in a thread (the
    baselines between calls are plain blocking code), and is entered and left in that loop's one task, as anyio's
    scopes require.
    """

    def __init__(self, url: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready: Future[None] = Future()
        self._requests: asyncio.Queue[tuple[str, dict[str, object], Future[tuple[float, str]]] | None]
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._served = asyncio.run_coroutine_threadsafe(self._serve(url), self._loop)
        try:
            self._ready.result(timeout=60)
        except BaseException:
            self._stop()
            raise

    async def _serve(self, url: str) -> None:
        self._requests = asyncio.Queue()
        try:
            async with Client(url, sampling_callback=_justify) as client:
                await client.list_tools()
                self._ready.set_result(None)
                while (request := await self._requests.get()) is not None:
                    tool, args, answer = request
                    try:
                        answer.set_result(await _call(client, tool, args))
                    except (Exception, SystemExit) as exc:  # a failed call's SystemExit too: raised in the caller
                        answer.set_exception(exc)
        except BaseException as exc:
            if not self._ready.done():  # the session never opened: the constructor raises it
                self._ready.set_exception(exc)
            raise

    def call(self, tool: str, args: dict[str, object]) -> tuple[float, str]:
        """Milliseconds of one `tools/call` and its call id."""
        answer: Future[tuple[float, str]] = Future()
        self._loop.call_soon_threadsafe(self._requests.put_nowait, (tool, args, answer))
        return answer.result()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._requests.put_nowait, None)
        try:
            self._served.result(timeout=60)
        finally:
            self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def _call(client: Client, tool: str, args: dict[str, object]) -> tuple[float, str]:
    began = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = time.perf_counter() - began
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content}")
    meta = (result.meta or {}).get("io.geogate/call", {})
    return elapsed * 1000, str(meta.get("call_id", ""))


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return (time.perf_counter() - began) * 1000


def reproject_args(output: str) -> dict[str, object]:
    return {"uri": "src.tif", "output": output, "dst_crs": DST_CRS, "resampling": "bilinear", "overwrite": True}


def interleaved(runs: int, jobs: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """Each job once to warm up, then `runs` rounds in alternating order; milliseconds per job."""
    for job in jobs.values():
        job()
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    for n in range(runs):
        for name in list(jobs) if n % 2 == 0 else reversed(list(jobs)):
            samples[name].append(jobs[name]())
    return samples


def costs(redis_url: str, call_id: str, redis_cpu_s: float = 0.0, output: Path | None = None) -> TiledCall | None:
    """Where a tiled call's time went, from its events (seconds): planning and fan-out, each tile's run in queue
    order, the wait for the fan-in after the last tile, the assembly; with the Redis CPU the call cost (spread over
    its tiles) and the bytes each tile wrote (the output's size over the tiles) when given."""
    store = EventStore(redis.Redis.from_url(redis_url), Settings().keys())
    events = store.read_aggregate(call_aggregate(call_id))
    started = next(e for e in events if isinstance(e.data, ToolStarted)).ts
    fanned = next((e for e in events if isinstance(e.data, ToolFannedOut)), None)
    if fanned is None:
        return None  # small enough to run whole
    fan_in = next(e for e in events if isinstance(e.data, ToolFanInStarted)).ts
    done = next(e for e in events if isinstance(e.data, ToolSucceeded)).ts
    tiles, spans, last = fanned.payload(ToolFannedOut).tiles, [], started
    for index in range(tiles):
        tile = store.read_aggregate(call_aggregate(tile_call_id(call_id, index)))
        begin = next(e for e in tile if isinstance(e.data, ToolStarted)).ts
        end = next(e for e in tile if isinstance(e.data, ToolSucceeded)).ts
        spans.append((end - begin).total_seconds())
        last = max(last, end)
    return TiledCall(
        plan_s=(fanned.ts - started).total_seconds(),
        tiles_s=tuple(spans),
        fan_in_wait_s=(fan_in - last).total_seconds(),
        assembly_s=(done - fan_in).total_seconds(),
        tile_bytes=output.stat().st_size / tiles if output is not None else 0.0,
        redis_s_per_tile=redis_cpu_s / tiles,
    )


def redis_cpu_s(redis_url: str) -> float:
    """Seconds of CPU the Redis server has used (user and system)."""
    info = redis.Redis.from_url(redis_url).info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def modelled_call(held: "Session", redis_url: str, output: Path) -> tuple[float, TiledCall | None]:
    """One more tiled reprojection, alone: its time (ms) and its cost model, with the Redis CPU it used."""
    before = redis_cpu_s(redis_url)
    ms, call_id = held.call("raster_reproject", reproject_args(output.name))
    return ms, costs(redis_url, call_id, redis_cpu_s(redis_url) - before, output)


STACKS = {"tiled, 2 workers": (2, {}), "whole, 2 workers": (2, OFF), "tiled, 1 worker": (1, {})}
"""Each configuration's stack (worker processes, settings), up alone: as `make run` is on a machine."""


def measure(runs: int = 3, size: int = 8192, stats_size: int = 16384) -> list[Row]:
    """Each stack up in turn, its calls interleaved with the in-process baselines (so every stack is set against
    baselines measured in the same minutes); the cost models from the last tiled calls' logs."""
    with tempfile.TemporaryDirectory(prefix="geogate-tiles-bench-") as tmp:
        root = Path(tmp)
        make_source(root / "src.tif", size)
        make_source(root / "big.tif", stats_size)
        baselines = {
            "rasterio 1 thread": lambda: timed(lambda: rasterio_warp(root / "src.tif", root / "r1.tif", 1)),
            "rasterio 2 threads": lambda: timed(lambda: rasterio_warp(root / "src.tif", root / "r2.tif", 2)),
        }
        rounds: dict[str, dict[str, list[float]]] = {}
        summary: dict[str, list[float]] = {}
        models: dict[str, TiledCall] = {}
        for name, (workers, env) in STACKS.items():
            with geogate_stack(workers=workers, workspace=root, env=env) as urls, Session(urls[0]) as held:
                calls: list[str] = []
                rounds[name] = interleaved(runs, {**baselines, name: _through(held, "raster_reproject", calls)})
                if name == "tiled, 1 worker":  # its tiles ran alone
                    _, cost = modelled_call(held, urls.redis, root / "out.tif")
                    if cost is not None:
                        models["reproject"] = cost
                if workers == 2:
                    label = "stats tiled" if not env else "stats whole"
                    summary[label] = interleaved(runs, {label: _through(held, "raster_stats", calls)})[label]
                    if not env and (cost := costs(urls.redis, calls[-1])):
                        models["stats"] = cost
    return report(rounds, summary, models, size, stats_size)


def _through(held: Session, tool: str, calls: list[str]) -> Callable[[], float]:
    """One call of `tool` on the held session (milliseconds); its call id is added to `calls`."""
    args = reproject_args("out.tif") if tool == "raster_reproject" else {"uri": "big.tif"}

    def run() -> float:
        ms, call_id = held.call(tool, args)
        calls.append(call_id)
        return ms

    return run


def report(
    rounds: dict[str, dict[str, list[float]]],
    summary: dict[str, list[float]],
    models: dict[str, TiledCall],
    size: int,
    big: int,
) -> list[Row]:
    """The rows, each call set against the baselines of its own stack's rounds.

    The machine's speed drifts over a run (a shared VM's neighbours come and go; docs/tiles.md has a run's figures),
    so a call is compared with the baselines measured in the same minutes, never with baselines pooled over the run;
    two calls from different stacks are compared each through its own rounds' one-thread warp (`_scaled`).
    """
    p50 = {stack: {name: statistics.median(values) for name, values in runs.items()} for stack, runs in rounds.items()}
    print(f"raster_reproject {size}² float32 4326→3857 bilinear; raster_stats {big}² float32 (medians)")
    for stack, runs in rounds.items():
        print(f"  {stack}, with the baselines of its rounds:")
        for name, values in runs.items():
            print(f"    {name:<22} {p50[stack][name]:10.1f} ms   ({', '.join(f'{v:.0f}' for v in values)})")
    for name, values in summary.items():
        print(f"  {name:<24} {statistics.median(values):10.1f} ms   ({', '.join(f'{v:.0f}' for v in values)})")
    tiled, whole = p50["tiled, 2 workers"]["tiled, 2 workers"], p50["whole, 2 workers"]["whole, 2 workers"]
    whole_here = _scaled(p50, "whole, 2 workers", "tiled, 2 workers")
    one_here = _scaled(p50, "tiled, 1 worker", "tiled, 2 workers")
    two_threads, one_thread = (
        p50["tiled, 2 workers"]["rasterio 2 threads"],
        p50["whole, 2 workers"]["rasterio 1 thread"],
    )
    efficiency = one_here / tiled / 2
    print(f"  parallel efficiency at 2 workers: {efficiency:.2f}")
    if "reproject" in models:
        show_model(models["reproject"], p50)
    if "stats" in models:
        print("  stats call on two workers (s): " + _shown(models["stats"]))
    # the model comes from the one-worker stack's log: scaled to the tiled stack's rounds as its call is
    t2 = (
        predict(models["reproject"], 2) * 1000 * one_here / p50["tiled, 1 worker"]["tiled, 1 worker"]
        if "reproject" in models
        else None
    )
    bandwidth = memory_bound_speedup()
    print(f"  a memory-bound NumPy pass, two processes at once vs one: {bandwidth:.2f}× the throughput")
    floor_t2 = "T(2) of the cost model: the same tiles with none slowed by another, and the serial parts"
    return [
        Row(f"tiled reproject {size}² vs rasterio num_threads=2", tiled, two_threads, "ms", "ratio", 1.0,
            baseline_name="rasterio warp, num_threads=2, in the bench, in the tiled stack's rounds",
            floor=t2 / two_threads if t2 else None, floor_name=floor_t2),
        Row(f"tiled vs whole reproject {size}²", tiled, whole_here, "ms", "speed-up", 1.8, at_most=False,
            baseline_name="the same call with tiling off, scaled to the tiled stack's rounds",
            floor=whole_here / t2 if t2 else None, floor_name=floor_t2),
        Row(f"whole reproject {size}² vs rasterio 1 thread", whole, one_thread, "ms", "ratio", 1.1,
            baseline_name="rasterio warp, one thread, in the bench, in the whole stack's rounds"),
        Row(f"tiled vs whole raster_stats {big}²", statistics.median(summary["stats tiled"]),
            statistics.median(summary["stats whole"]), "ms", "speed-up", 1.8, at_most=False,
            baseline_name="the same call with tiling off", floor=bandwidth,
            floor_name="what a second process adds to a memory-bound NumPy pass on this machine"),
        Row("tiled reproject, 2 workers vs 1", tiled, one_here, "ms", "speed-up", 1.8, at_most=False,
            baseline_name="one worker process, scaled to the tiled stack's rounds",
            floor=one_here / t2 if t2 else None, floor_name=floor_t2),
    ]  # fmt: skip


def _scaled(p50: dict[str, dict[str, float]], stack: str, to: str) -> float:
    """`stack`'s call time as it would have been in `to`'s rounds: scaled by the ratio of the one-thread warp's
    medians in the two stacks' rounds."""
    ratio = p50[to]["rasterio 1 thread"] / p50[stack]["rasterio 1 thread"]
    return p50[stack][stack] * ratio


def _pass(_: int) -> float:
    """Seconds per pass over 4 Mi float32 values (widened, shifted, summed up): bound by memory bandwidth."""
    values = np.random.default_rng(1).random(1 << 22, dtype=np.float32)
    began = time.perf_counter()
    for _ in range(40):
        wide = values.astype(np.float64)
        wide -= 1.0
        np.square(wide, out=wide)
        float(wide.sum())
    return (time.perf_counter() - began) / 40


def memory_bound_speedup() -> float:
    """How much more a second process gets through of a memory-bound pass (2.0 with bandwidth to spare)."""
    alone = _pass(0)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        both = pool.map(_pass, [0, 1])
    return 2 * alone / max(both)


def _shown(cost: TiledCall) -> str:
    parts = {"plan": cost.plan_s, "tiles' work": cost.work_s, "longest tile": max(cost.tiles_s)}
    parts |= {"fan-in wait": cost.fan_in_wait_s, "assembly": cost.assembly_s}
    shown = ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
    per_tile = f"Redis {cost.redis_s_per_tile * 1e6:.0f} µs CPU and {cost.tile_bytes / 1e6:.1f} MB written per tile"
    return f"{len(cost.tiles_s)} tiles; {shown}; {per_tile}"


STORAGE = {"no wait": None, "10 GbE NFS, 1.1 GB/s": 1.1e9, "1 GbE NFS, 110 MB/s": 1.1e8}
"""Shared storage the simulation is run for (bytes/s over every worker)."""


def show_model(cost: TiledCall, p50: dict[str, dict[str, float]]) -> None:
    """The cost model from the one-worker call, checked against the measured calls on 1 and 2 workers (each set in
    the one-worker stack's rounds), then simulated for larger clusters with the shared Redis core and storage."""
    print("  reproject cost model, from a call on one worker (s): " + _shown(cost))
    print(f"  serial fraction: {cost.serial_s / predict(cost, 1):.3f}")
    one = p50["tiled, 1 worker"]["tiled, 1 worker"] / 1000
    two = _scaled(p50, "tiled, 2 workers", "tiled, 1 worker") / 1000
    for workers, measured in ((1, one), (2, two)):
        model = predict(cost, workers)
        print(f"  T({workers}) predicted {model:.2f} s, measured {measured:.2f} s ({measured / model:.2f}×)")
    for label, calls in (("this call", cost), ("16× its tiles", scaled(cost, 16 * len(cost.tiles_s)))):
        for storage, rate in STORAGE.items():
            row = ", ".join(f"{n}: {simulate(calls, n, rate):.2f}" for n in (1, 2, 4, 8, 16, 32, 64, 128))
            print(f"  simulated, {label}, {storage} (workers: s): {row}; knee at {knee(calls, rate)} workers")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--stats-size", type=int, default=16384)
    ns = parser.parse_args()
    show("tiles", measure(ns.runs, ns.size, ns.stats_size))


if __name__ == "__main__":
    sys.exit(main())
