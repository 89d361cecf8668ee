"""Throughput under 64 concurrent clients: Geogate's full path vs a bare MCPServer serving the same `ping`, same run.

Load generator: wrk (C, 1 thread, 64 connections) with bench/mcp_call.lua, sending stateless MCP 2026-07-28
`tools/call` requests; it is light enough not to be the bottleneck (it uses a small share of one core).
Usage: python bench/throughput.py [--seconds 10] [--gateways 1] [--workers 2] [--pool prefork|solo]
"""

import argparse
import re
import shutil
import subprocess
from pathlib import Path

from _stack import bare_server, geogate_stack

LUA = Path(__file__).with_name("mcp_call.lua")


def wrk(url: str, seconds: int, connections: int = 64) -> dict[str, float]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(LUA), url]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = sum(int(n) for n in re.findall(r"(?:Non-2xx or 3xx responses|Socket errors: .*?timeout) (\d+)", out))
    fields = dict(re.findall(r"^(BAD|P50|P99) ([\d.]+)$", out, re.M))
    return {
        "rate": rate,
        "total": total,
        "bad": float(fields["BAD"]) + errors,
        "p50": float(fields["P50"]),
        "p99": float(fields["P99"]),
    }


def show(label: str, r: dict[str, float]) -> None:
    print(
        f"{label:28s} {r['rate']:8.1f} calls/s  errors {int(r['bad'])}/{int(r['total'])}  "
        f"latency p50 {r['p50']:.1f} ms  p99 {r['p99']:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--gateways", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pool", default=None, choices=["prefork", "solo", "threads"], help="default: make run's")
    ns = parser.parse_args()
    with bare_server() as bare:
        wrk(bare, 2)
        theirs = wrk(bare, ns.seconds)
    with geogate_stack(workers=ns.workers, pool=ns.pool, gateways=ns.gateways) as urls:
        wrk(urls[0], 2)  # warm-up
        ours = wrk(urls[0], ns.seconds)
    show("bare MCPServer", theirs)
    show(f"geogate ({ns.gateways} gw, {ns.workers} {ns.pool or 'make-run'} workers)", ours)
    print(f"ratio {ours['rate'] / theirs['rate']:.2f} of the bare server (target >= 0.50; and >= 400 calls/s)")


if __name__ == "__main__":
    main()
