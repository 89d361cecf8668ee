"""The one-Redis ceiling: N = 1, 2, 3 gateway processes against one redis-server, driven with `ping` (the cheapest
tool: one `tool.requested`, a Celery hop, `tool.started` and `tool.succeeded`), reporting calls/s, the CPU Redis
spends per call (INFO's used_cpu_user + used_cpu_sys over the run) and the commands it runs per call.

Redis is pinned to core 0 and every other process (gateways, Celery workers, wrk) to the remaining cores with
`taskset`, so Redis has a core of its own. On a 2-core machine the gateways, the workers and the load share one core:
they saturate long before Redis does, so the ceiling is read off Redis' CPU per call (1 / that = calls/s one Redis
core carries) and its busy share of its core, not reached by the load. Each N is a fresh stack; the N = 1 row is the
baseline the others are put beside (same process, same run).

Usage: python bench/ceiling.py [--seconds 15] [--gateways 1 2 3]
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stack import geogate_stack
from cpu import descendants, role
from throughput import parse_wrk, wrk, wrk_argv

from geogate.process.lifetime import dies_with_this_process

REDIS_CORE = "0"
IDLE_S = 3


def other_cores() -> str:
    cores = sorted(os.sched_getaffinity(0))
    rest = [c for c in cores if str(c) != REDIS_CORE] or cores
    return ",".join(str(c) for c in rest)


def pin_stack() -> None:
    """Redis on its own core; every other process this bench started (and their threads) on the others."""
    for pid in descendants():
        cores = REDIS_CORE if role(pid, descendants()) == "redis-server" else other_cores()
        subprocess.run(["taskset", "-a", "-p", "-c", cores, str(pid)], capture_output=True, check=False)


def redis_counters(client: redis.Redis) -> tuple[float, int]:
    """Redis' CPU seconds (user + system) and commands processed so far."""
    cpu, stats = client.info("cpu"), client.info("stats")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), int(stats["total_commands_processed"])


def load(urls: list[str], seconds: int, connections: int = 64) -> list[dict[str, float]]:
    """One wrk per gateway at once (connections shared out), pinned off Redis' core."""
    each = max(1, connections // len(urls))
    runs = [
        subprocess.Popen(
            ["taskset", "-c", other_cores(), *wrk_argv(url, seconds, each)],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=dies_with_this_process(),
        )
        for url in urls
    ]
    return [parse_wrk(run.communicate()[0]) for run in runs]


def measure(gateways: int, seconds: int) -> dict[str, float]:
    with geogate_stack(workers=2, gateways=gateways) as urls:
        client = redis.Redis.from_url(urls.redis)
        pin_stack()
        for url in urls:
            wrk(url, 2, 16)  # warm-up
        idle_cpu, _ = redis_counters(client)
        time.sleep(IDLE_S)  # what Redis spends with no call (polls, heartbeats, the ops summary's blocking reads)
        cpu, commands = redis_counters(client)
        idle = (cpu - idle_cpu) / IDLE_S
        began = time.perf_counter()
        runs = load(list(urls), seconds)
        elapsed = time.perf_counter() - began
        cpu_after, commands_after = redis_counters(client)
    calls = sum(int(r["total"]) for r in runs)
    busy = cpu_after - cpu
    net = max(0.0, busy - idle * elapsed)
    return {
        "net_ms": net * 1000 / max(1, calls),
        "calls": calls,
        "rate": calls / elapsed,
        "bad": sum(r["bad"] for r in runs),
        "redis_ms": busy * 1000 / max(1, calls),
        "redis_busy": busy / elapsed,
        "commands": (commands_after - commands) / max(1, calls),
        "p50": max(r["p50"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--gateways", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}; Redis on core {REDIS_CORE}, gateways + workers + wrk on {other_cores()}")
    rows = {n: measure(n, args.seconds) for n in args.gateways}
    base = rows[args.gateways[0]]
    print("| gateways | calls/s | × N=1 | Redis CPU per call (all / above idle) | Redis core busy | "
          "Redis commands per call | calls/s one Redis core carries (1 / CPU above idle) | errors |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for n, r in rows.items():
        print(
            f"| {n} | {r['rate']:,.0f} | {r['rate'] / base['rate']:.2f} | "
            f"{r['redis_ms'] * 1000:.0f} / {r['net_ms'] * 1000:.0f} µs | {r['redis_busy']:.0%} | "
            f"{r['commands']:.1f} | {1000 / max(r['net_ms'], 1e-3):,.0f} | {int(r['bad'])} |"
        )


if __name__ == "__main__":
    main()
