"""Bench: the ops summary over a large log. Appends N events (default 1,000,000) of realistic calls, then times

- the ops summary's fold of the whole log (events/s), in-process,
- `GET /ops/api/summary` (all time and last hour) and `GET /ops` on a real gateway (median, p99), against a
  baseline measured the same way over the first 10,000 events in the same run (the ratio shows the cost does not
  grow with the log; target: under 1 s over 1M events),
- `geogate replay --check` and `geogate replay` as commands (events/s; target ≥ 100,000), with the CPU Redis spent
  on each (INFO's used_cpu_user + used_cpu_sys).

Run: `.venv/bin/python bench/ops.py [--events N] [--data DIR]`. With `--data`, Redis keeps its data in DIR; a later
run given the same DIR reuses that log (appending 1M events takes minutes) and times the replays alone.
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._stack import _wait_http, percentile
from geogate.calls import ops_feed
from geogate.calls.keys import Keys, outcome_key, requested_key, started_key
from geogate.calls.projections import ops_for
from geogate.cli import dev
from geogate.cli.dev import Children, free_port, start_redis
from geogate.eventlog.append import SCRIPT, script_call, stream_fields
from geogate.eventlog.keys import all_categories
from geogate.settings import Settings
from schemas.events import Event, EventData, ToolFailed, ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate, new_id

TOOLS = [("ping", 0.6, 0.05), ("raster_info", 0.2, 4.0), ("vector_info", 0.1, 6.0), ("raster_reproject", 0.1, 180.0)]
CODES = ["path.not_found", "gdal.open_failed", "job.timeout"]
SPAN_S = 50 * 60
"""The synthetic calls spread over the last 50 minutes, so the one-hour window holds them all."""
T = TypeVar("T")


class Appender:
    """Appends through the real append script (projections updated in the same call), pipelined."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.keys, self.live = client, keys, keys.projections()
        self.script = client.register_script(SCRIPT)
        self.pipe = client.pipeline(transaction=False)
        self.pending = 0

    def add(self, event: Event, dedupe: str) -> None:
        dedupe_key, dedupe_field = self.keys.dedupe_slot(dedupe)
        call = script_call(
            mode="append",
            stream=self.keys.stream_for(event.aggregate),
            dedupe=dedupe_key,
            dedupe_field=dedupe_field,
            index=self.live.index(event.aggregate),
            fields=stream_fields(event, dedupe),
            ops=ops_for(event, self.live),
            ttl=86400,
        )
        self.script(keys=call.keys, args=call.args, client=self.pipe)
        self.pending += 1
        if self.pending >= 2000:
            self.flush()

    def flush(self) -> None:
        self.pipe.execute()
        self.pending = 0


def one_call(appender: Appender, rng: random.Random, at: datetime) -> int:
    tool, _, run_ms = rng.choices(TOOLS, weights=[t[1] for t in TOOLS])[0]
    cid, trace = new_id(), new_id()
    queue_ms, run = rng.expovariate(1 / 3.0), rng.expovariate(1 / run_ms)

    def event(data: EventData, ms: float) -> Event:
        ts = at + timedelta(milliseconds=ms)
        return Event(id=new_id(), aggregate=call_aggregate(cid), ts=ts, trace_id=trace, actor="bench", data=data)

    appender.add(
        event(ToolRequested(call_id=cid, tool=tool, queue="gdal", args={"uri": "a.tif"}, timeout_s=60), 0),
        requested_key(cid),
    )
    started = ToolStarted(call_id=cid, worker=f"bench:{rng.randint(1, 4)}", attempt="a1", queue_wait_ms=queue_ms)
    appender.add(event(started, queue_ms), started_key(cid, "a1"))
    if rng.random() < 0.1:
        outcome: EventData = ToolFailed(call_id=cid, code=rng.choice(CODES), message="x", duration_ms=run, worker="w")
    else:
        outcome = ToolSucceeded(call_id=cid, result={"ok": True}, duration_ms=run, worker="w")
    appender.add(event(outcome, queue_ms + run + 0.3), outcome_key(cid))
    return 3


def append(appender: Appender, count: int, start: datetime, rng: random.Random) -> None:
    done = 0
    while done < count:
        done += one_call(appender, rng, start + timedelta(seconds=SPAN_S * done / max(count, 1)))
    appender.flush()


def time_get(url: str, n: int = 30) -> list[float]:
    times = []
    with httpx.Client(timeout=60) as client:
        client.get(url).raise_for_status()
        for _ in range(n):
            began = time.perf_counter()
            client.get(url).raise_for_status()
            times.append((time.perf_counter() - began) * 1000)
    return times


def endpoints(base: str) -> dict[str, list[float]]:
    return {
        "GET /ops/api/summary?window=all": time_get(f"{base}/ops/api/summary?window=all"),
        "GET /ops/api/summary?window=1h": time_get(f"{base}/ops/api/summary?window=1h"),
        "GET /ops (the whole page)": time_get(f"{base}/ops?window=1h"),
    }


def with_gateway(env: dict[str, str], data: Path) -> tuple[Children, str]:
    children, port = Children(), free_port()
    argv = [sys.executable, "-m", "geogate.cli", "gateway", "--port", str(port)]
    children.spawn(argv, {**env, "GEOGATE_PORT": str(port)}, log=data / "gateway.log")
    base = f"http://127.0.0.1:{port}"
    _wait_http(f"{base}/health")
    return children, base


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    began = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - began


def endpoints_over(env: dict[str, str], data: Path) -> dict[str, list[float]]:
    """Time the endpoints on a gateway started for it (its summary is level with the log already)."""
    gateway, base = with_gateway(env, data)
    try:
        return endpoints(base)
    finally:
        gateway.stop()


def report(figures: dict[str, Any], small: dict[str, list[float]], large: dict[str, list[float]]) -> None:
    events, baseline_n = figures["events"], figures["baseline"]
    print(f"log: {events:,} events ({figures['append_s']:.0f} s to append; Redis uses {figures['memory']})")
    folded, fold_s = figures["folded"], figures["fold_s"]
    print(f"ops summary fold: {folded:,} events in {fold_s:.1f} s = {folded / fold_s:,.0f} events/s")
    for name in small:
        b, m = statistics.median(small[name]), statistics.median(large[name])
        print(
            f"{name}: over {events:,} events p50 {m:.2f} ms p99 {percentile(large[name], 99):.2f} ms; "
            f"over {baseline_n:,}: p50 {b:.2f} ms p99 {percentile(small[name], 99):.2f} ms; ratio {m / b:.2f}x"
        )
    report_replays(figures)


def report_replays(figures: dict[str, Any]) -> None:
    events = figures["events"]
    for name, (run, seconds, redis_cpu) in figures["replays"].items():
        status = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr.strip()[-300:]
        print(
            f"{name}: {events:,} events in {seconds:.1f} s = {events / seconds:,.0f} events/s; "
            f"Redis CPU {redis_cpu:.1f} s ({status})"
        )


def replays(env: dict[str, str], client: redis.Redis) -> dict[str, tuple[Any, float, float]]:
    """`geogate replay --check`, then `geogate replay`, as commands: (result, seconds, Redis CPU seconds) each."""
    found = {}
    for name, extra in (("geogate replay --check", ["--check"]), ("geogate replay", [])):
        cpu = redis_cpu(client)
        argv = [sys.executable, "-m", "geogate.cli", "replay", *extra]
        run, seconds = timed(lambda argv=argv: subprocess.run(argv, env=env, capture_output=True, text=True))
        found[name] = (run, seconds, redis_cpu(client) - cpu)
    return found


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, help="keep Redis's data here, and reuse the log a run left there")
    args = parser.parse_args()
    data = args.data or Path(tempfile.mkdtemp(prefix="geogate-bench-ops-"))
    reuse, redis_children = (data / "redis").is_dir(), Children()
    if reuse:  # a reused 1M-event log (about 1 GB) loads for longer than start_redis' 10 s wait on a busy machine
        dev._wait_for_redis = partial(dev._wait_for_redis, timeout_s=300)
    try:
        url = start_redis(Settings(data_dir=data), redis_children)
        client, keys = redis.Redis.from_url(url), Keys("geogate")
        env = {**os.environ, "REDIS_URL": url, "GEOGATE_LOG_LEVEL": "WARNING"}
        figures = {} if reuse else build_log(client, keys, env, data, args.events)
        ops_feed.catch_up(client, keys)  # level with the log, as running gateways keep it (a no-op after build_log)
        figures["replays"] = replays(env, client)
        figures["events"] = sum(client.xlen(keys.stream(c)) for c in all_categories())
        figures["memory"] = client.info("memory")["used_memory_human"]
    finally:
        redis_children.stop()
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)  # about 1 GB of Redis data at 1M events
    if reuse:
        print(f"log: {figures['events']:,} events, reused from {data} (Redis uses {figures['memory']})")
        report_replays(figures)
    else:
        report(figures, figures.pop("small"), figures.pop("large"))


def build_log(client: redis.Redis, keys: Keys, env: dict[str, str], data: Path, total: int) -> dict[str, Any]:
    """Append `total` events and time the ops summary and its endpoints over the first 10,000 and over all."""
    baseline_n, rng = min(10_000, total), random.Random(7)
    start = datetime.now(UTC) - timedelta(seconds=SPAN_S + 60)
    appender = Appender(client, keys)
    append(appender, baseline_n, start, rng)
    ops_feed.catch_up(client, keys)
    small = endpoints_over(env, data)
    _, append_s = timed(lambda: append(appender, total - baseline_n, start, rng))
    folded, fold_s = timed(lambda: ops_feed.catch_up(client, keys))
    large = endpoints_over(env, data)
    return {"baseline": baseline_n, "append_s": append_s, "folded": folded, "fold_s": fold_s} | {
        "small": small,
        "large": large,
    }


if __name__ == "__main__":
    main()
