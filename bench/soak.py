"""Soak: a few hundred thousand calls through the log with retention on; Redis memory must level off.

What it drives: the event store's own append path, exactly as the gateway and a worker use it for a `ping`
(`tool.requested`, `tool.started`, `tool.progress`, `tool.succeeded`, each one Lua append with its projections and
dedupe key), from this process, against a private redis-server. No Celery and no MCP: the queue message is left
out (nothing would consume it), so what is measured is what the log, its projections and retention keep.
Retention as a deployment would run it: finished calls expire after `--finished-ttl` (dedupe keys after the same),
and a retention pass (snapshot, then trim to `--maxlen` per stream) runs every `--trim-every` calls.

Usage: python bench/soak.py [--calls 300000] [--maxlen 20000] [--finished-ttl 30] [--trim-every 5000]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _events import make_event  # noqa: E402

from geogate.calls import keys  # noqa: E402
from geogate.calls.store import EventStore  # noqa: E402
from geogate.cli.dev import Children, start_redis  # noqa: E402
from geogate.eventlog.replay import replay  # noqa: E402
from geogate.eventlog.retention import trim  # noqa: E402
from geogate.settings import RetentionPolicy, Settings  # noqa: E402
from schemas.events import ToolProgress, ToolRequested, ToolStarted, ToolSucceeded  # noqa: E402
from schemas.ids import call_aggregate, new_id  # noqa: E402


def one_call(store: EventStore, n: int) -> None:
    call_id = new_id()
    agg = call_aggregate(call_id)
    requested = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={"n": n % 10}, timeout_s=30)
    started = ToolStarted(call_id=call_id, worker="soak:1", attempt="a", lease="soak", queue_wait_ms=0.1)
    for data, key in (
        (requested, keys.requested_key(call_id)),
        (started, keys.started_key(call_id, "a")),
        (ToolProgress(call_id=call_id, progress=1, total=1), keys.progress_key(call_id, "a", 1)),
        (ToolSucceeded(call_id=call_id, result={"pong": True}, duration_ms=0.4), keys.outcome_key(call_id)),
    ):
        store.append(make_event(agg, data), key)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--maxlen", type=int, default=20_000)
    parser.add_argument("--finished-ttl", type=int, default=30)
    parser.add_argument("--trim-every", type=int, default=5_000)
    ns = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    children = Children()
    try:
        data = Path(tempfile.mkdtemp(prefix="geogate-soak-"))
        url = start_redis(Settings(data_dir=data, redis_appendfsync="everysec"), children)
        retention = RetentionPolicy(maxlen=ns.maxlen, finished_ttl_s=ns.finished_ttl)
        settings = Settings(redis_url=url, dedupe_ttl_s=ns.finished_ttl, retention=retention)
        store = EventStore.from_settings(settings)
        memory = lambda: int(store.redis.info("memory")["used_memory"])  # noqa: E731
        start = peak = memory()
        print(f"{'calls':>8} {'used memory':>12} {'calls/s':>8} {'calls stream':>12}")
        began = last = time.perf_counter()
        for n in range(1, ns.calls + 1):
            one_call(store, n)
            if n % ns.trim_every == 0:
                trim(store, retention)
                used, now = memory(), time.perf_counter()
                peak = max(peak, used)
                rate = ns.trim_every / (now - last)
                print(
                    f"{n:>8} {used / 2**20:>9.1f} MiB {rate:>8.0f} {store.redis.xlen(store.keys.stream('calls')):>12}"
                )
                last = now
        end = memory()
        elapsed = time.perf_counter() - began
        check = replay(store, swap=False)
        print(f"{ns.calls} calls in {elapsed:.0f} s; Redis used memory: start {start / 2**20:.1f} MiB, "
              f"peak {peak / 2**20:.1f} MiB, end {end / 2**20:.1f} MiB")  # fmt: skip
        print(f"replay --check after the soak: {'identical' if check.identical else 'DIFFERENT'} "
              f"({check.events} events after the snapshot)")  # fmt: skip
    finally:
        children.stop()


if __name__ == "__main__":
    main()
