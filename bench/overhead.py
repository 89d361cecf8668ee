"""Added latency of Geogate's full path for `ping`, against the same function in a bare MCPServer, same run.

Both are driven sequentially by the SDK client (2026-07-28 era, Streamable HTTP) from this process.
Usage: python bench/overhead.py [--calls 500] [--pool prefork|solo|threads]
"""

import argparse
import asyncio
import time
from statistics import median

from _report import Row, load, show
from _stack import bare_server, describe, geogate_stack, percentile
from hop import hop_stack
from mcp import Client

BARE = "a bare MCPServer, same ping"
HOP = "the same ping behind one Celery hop (bench/hop.py)"


async def timed_calls(url: str, calls: int, warmup: int = 50) -> list[float]:
    samples = []
    async with Client(url) as client:
        for n in range(warmup + calls):
            began = time.perf_counter()
            result = await client.call_tool("ping", {})
            elapsed = (time.perf_counter() - began) * 1000
            if result.is_error:
                raise SystemExit(f"ping failed: {result.content}")
            if n >= warmup:
                samples.append(elapsed)
    return samples


async def interleaved(urls: dict[str, str], calls: int, rounds: int = 5) -> dict[str, list[float]]:
    """Alternate blocks of calls on each server (the order turning each round) so that noise hits all alike."""
    samples: dict[str, list[float]] = {name: [] for name in urls}
    for n in range(rounds):
        for name in urls if n % 2 == 0 else reversed(urls):
            samples[name] += await timed_calls(urls[name], calls // rounds)
    return samples


def measure(calls: int = 500, pool: str | None = None) -> list[Row]:
    """The table's first rows: `ping` through `make run`'s stack against a bare MCPServer, and through one Celery
    hop without and with the log's three appends (the floors), interleaved."""
    with (
        geogate_stack(workers=2, pool=pool) as urls,
        bare_server() as bare,
        hop_stack() as hop,
        hop_stack(logged=True) as logged,
    ):
        servers = {"geogate": urls[0], "bare": bare, "hop": hop, "logged": logged}
        samples = asyncio.run(interleaved(servers, calls))
    ours, theirs, floor, log_floor = samples["geogate"], samples["bare"], samples["hop"], samples["logged"]
    print(f"bare MCPServer ping            {describe(theirs)}")
    print(f"ping through one hop           {describe(floor)}  [the floor: bench/hop.py]")
    print(f"ping through one hop + the log {describe(log_floor)}  [bench/hop.py, bench/_hoplog.py]")
    print(f"geogate ping (full path)       {describe(ours)}  [worker pools: {pool or 'those of make run'}]")
    p50s, p99s = (median(ours), median(theirs)), (percentile(ours, 99), percentile(theirs, 99))
    return [
        Row(
            "ping added, p50",
            *p50s,
            "ms",
            "added",
            3.0,
            baseline_name=BARE,
            floor=median(floor) - p50s[1],
            floor_name=HOP,
            log_floor=median(log_floor) - p50s[1],
        ),
        Row(
            "ping added, p99",
            *p99s,
            "ms",
            "added",
            8.0,
            baseline_name=BARE,
            floor=percentile(floor, 99) - p99s[1],
            floor_name=HOP,
            log_floor=percentile(log_floor, 99) - p99s[1],
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--pool", default=None, choices=["prefork", "solo", "threads"], help="default: make run's")
    ns = parser.parse_args()
    print(load())
    show("added by geogate over a bare MCPServer", measure(ns.calls, ns.pool))


if __name__ == "__main__":
    main()
