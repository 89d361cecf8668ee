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
from mcp import Client

BARE = "a bare MCPServer, same ping"


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


async def interleaved(gateway: str, bare: str, calls: int, rounds: int = 5) -> tuple[list[float], list[float]]:
    """Alternate blocks of calls so that machine noise hits both sides alike."""
    ours, theirs = [], []
    for _ in range(rounds):
        ours += await timed_calls(gateway, calls // rounds)
        theirs += await timed_calls(bare, calls // rounds)
    return ours, theirs


def measure(calls: int = 500, pool: str | None = None) -> list[Row]:
    """The table's first row: `ping` through `make run`'s stack against a bare MCPServer, interleaved."""
    with geogate_stack(workers=2, pool=pool) as urls, bare_server() as bare:
        ours, theirs = asyncio.run(interleaved(urls[0], bare, calls))
    print(f"bare MCPServer ping      {describe(theirs)}")
    print(f"geogate ping (full path) {describe(ours)}  [worker pools: {pool or 'those of make run'}]")
    p99s = percentile(ours, 99), percentile(theirs, 99)
    return [
        Row("ping added, p50", median(ours), median(theirs), "ms", "added", 3.0, baseline_name=BARE),
        Row("ping added, p99", *p99s, "ms", "added", 8.0, baseline_name=BARE),
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
