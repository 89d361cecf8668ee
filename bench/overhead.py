"""Added latency of Geogate's full path for `ping`, against the same function in a bare MCPServer, same run.

Both are driven sequentially by the SDK client (Streamable HTTP) from this process (bench/_ping.py).
Usage: python bench/overhead.py [--calls 500] [--pool prefork|solo|threads]
"""

import argparse
import asyncio
from statistics import median

from _ping import interleaved
from _report import Row, load, show
from _stack import bare_server, describe, geogate_stack, percentile
from hop import hop_stack

BARE = "a bare MCPServer, same ping"
HOP = "the same ping behind one Celery hop (bench/hop.py)"


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
