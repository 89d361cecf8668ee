"""Throughput under 64 concurrent clients: Geogate's full path vs a bare MCPServer serving the same `ping`, same run.

Load generator: wrk (C, 1 thread, 64 connections) with bench/mcp_call.lua, sending stateless MCP 2026-07-28
`tools/call` requests; it is light enough not to be the bottleneck (it uses a small share of one core).
Both servers are up at once and loaded in alternate runs, so that machine noise hits both alike. Each run also
prints the CPU a call costs in each role (bench/cpu.py): on 2 cores that sum, not one process, bounds the rate.
Usage: python bench/throughput.py [--seconds 10] [--rounds 2] [--gateways 1] [--workers 2] [--pool prefork|solo|threads]
"""

import argparse
import re
import shutil
import statistics
import subprocess
from pathlib import Path

from _report import Row, load, show
from _stack import bare_server, geogate_stack
from cpu import per_call as cpu_per_call
from cpu import show as show_cpu
from hop import hop_stack

from geogate.process.lifetime import dies_with_this_process

LUA = Path(__file__).with_name("mcp_call.lua")


def wrk_argv(url: str, seconds: int, connections: int = 64) -> list[str]:
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    return ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(LUA), url]


def parse_wrk(out: str) -> dict[str, float]:
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


def wrk(url: str, seconds: int, connections: int = 64) -> dict[str, float]:
    argv = wrk_argv(url, seconds, connections)
    done = subprocess.run(argv, capture_output=True, text=True, check=True, preexec_fn=dies_with_this_process())
    return parse_wrk(done.stdout)


def loaded(url: str, seconds: int) -> tuple[dict[str, float], dict[str, float]]:
    """One `wrk` run against `url`, and each role's CPU milliseconds per call over it."""
    return cpu_per_call(lambda: wrk(url, seconds), lambda r: int(r["total"]))


def print_run(label: str, r: dict[str, float]) -> None:
    print(
        f"{label:34s} {r['rate']:8.1f} calls/s  errors {int(r['bad'])}/{int(r['total'])}  "
        f"latency p50 {r['p50']:.1f} ms  p99 {r['p99']:.1f} ms"
    )


def measure(
    seconds: int = 10, rounds: int = 2, gateways: int = 1, workers: int = 2, pool: str | None = None
) -> list[Row]:
    """The table's row: calls/s through `make run`'s stack against the bare server, and through one Celery hop
    without and with the log's appends (the floors), all up, in alternate runs."""
    block = max(1, seconds // rounds)
    with (
        bare_server() as bare,
        geogate_stack(workers=workers, pool=pool, gateways=gateways) as urls,
        hop_stack() as hop,
        hop_stack(logged=True) as logged,
    ):
        servers = (bare, urls[0], hop, logged)
        for url in servers:
            wrk(url, 2)  # warm-up
        runs, cpu = [], []
        for _ in range(rounds):
            timed = [loaded(url, block) for url in servers]
            runs.append(tuple(result for result, _ in timed))
            cpu.append([spent for _, spent in timed])
    label = f"geogate ({gateways} gw, {workers} {pool or 'make-run'} workers)"
    names = ("bare MCPServer", label, "one hop (2 Celery workers)", "one hop + the log's appends")
    for run in runs:
        for name, result in zip(names, run, strict=True):
            print_run(name, result)
    for side, name in enumerate(names):
        show_cpu(f"{name} (last run)", cpu[-1][side])
    bad = sum(int(ours["bad"]) for _, ours, _, _ in runs)
    if bad:
        print(f"WARNING: {bad} geogate calls were errors or not a pong")
    theirs_rate, ours_rate, floor_rate, log_rate = (statistics.mean(run[n]["rate"] for run in runs) for n in range(4))
    return [
        Row(
            "calls/s, 64 concurrent clients",
            ours_rate,
            theirs_rate,
            "calls/s",
            "ratio",
            0.6,
            at_most=False,
            baseline_name="a bare MCPServer, same ping",
            floor=floor_rate / theirs_rate,
            floor_name="the same ping behind one Celery hop (bench/hop.py)",
            log_floor=log_rate / theirs_rate,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10, help="of load on each side, in --rounds alternate runs")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gateways", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pool", default=None, choices=["prefork", "solo", "threads"], help="default: make run's")
    ns = parser.parse_args()
    print(load())
    rows = measure(ns.seconds, ns.rounds, ns.gateways, ns.workers, ns.pool)
    show("throughput against a bare MCPServer, same run", rows)


if __name__ == "__main__":
    main()
