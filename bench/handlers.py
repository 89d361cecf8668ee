"""Added latency of result handlers on the full path: `ping` with a trivial Python / JMESPath handler vs without.

One run, one stack, interleaved rounds so that machine noise hits every variant alike. The added time is the
handler's whole path: the job enqueued with `tool.succeeded`, a sandbox worker taking it, the run, `handler.*`.
Usage: python bench/handlers.py [--calls 300] [--workers 2]
"""

import argparse
import asyncio
import time
from statistics import median
from typing import Any

from _report import Row, load, show
from _stack import describe, geogate_stack, percentile
from mcp import Client

from schemas.result_handlers import ResultHandler
from workers.sandbox import PythonSandbox, SandboxConfig, run_handler

BASE = "the same ping without a handler"
VARIANTS: dict[str, dict[str, Any]] = {
    "no handler": {},
    "python trivial": {"result_handler": {"language": "python", "script": "tool_output['pong']"}},
    "jmespath": {"result_handler": {"language": "jmespath", "script": "pong"}},
}


async def timed_calls(client: Client, arguments: dict[str, Any], calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        result = await client.call_tool("ping", arguments)
        samples.append((time.perf_counter() - began) * 1000)
        if result.is_error:
            raise SystemExit(f"ping failed: {result.content}")
    return samples


async def interleaved(url: str, calls: int, rounds: int = 5, warmup: int = 30) -> dict[str, list[float]]:
    """Alternate blocks of each variant over one client session."""
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    async with Client(url) as client:
        for arguments in VARIANTS.values():
            await timed_calls(client, arguments, warmup)
        for _ in range(rounds):
            for name, arguments in VARIANTS.items():
                samples[name] += await timed_calls(client, arguments, calls // rounds)
    return samples


def measure(calls: int = 300, workers: int = 2) -> list[Row]:
    """The table's row: a trivial Python handler added over the same `ping` without one (p50)."""
    with geogate_stack(workers=workers) as urls:
        samples = asyncio.run(interleaved(urls[0], calls))
    base = samples["no handler"]
    for name, values in samples.items():
        print(f"{name:<15} {describe(values)}")
    for name in ("python trivial", "jmespath"):
        added50 = percentile(samples[name], 50) - percentile(base, 50)
        added99 = percentile(samples[name], 99) - percentile(base, 99)
        target = " (target <= 5)" if name.startswith("python") else ""
        print(f"added by {name:<15} p50 {added50:+.2f} ms{target}, p99 {added99:+.2f} ms")
    alone = sandbox_alone(calls)
    print(f"{'the sandbox run alone':<15} {describe(alone)}  [the floor: the same handler in a warm sandbox, here]")
    python = median(samples["python trivial"])
    return [
        Row(
            "trivial Python handler added, p50",
            python,
            median(base),
            "ms",
            "added",
            5.0,
            baseline_name=BASE,
            floor=median(alone),
            floor_name="the same handler run in a warm sandbox, nothing else",
        )
    ]


def sandbox_alone(calls: int) -> list[float]:
    """The handler's own run: the same script over ping's output in a warm sandbox of this process, no log, no queue."""
    sandbox = PythonSandbox(SandboxConfig())
    handler = ResultHandler(**VARIANTS["python trivial"]["result_handler"])
    output = {"pong": True, "worker": "bench", "queue": "gdal", "queue_wait_ms": 0.0}
    samples = []
    try:
        for n in range(calls + 30):
            began = time.perf_counter()
            run_handler(handler, output, sandbox=sandbox)
            if n >= 30:
                samples.append((time.perf_counter() - began) * 1000)
    finally:
        sandbox.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    ns = parser.parse_args()
    print(load())
    show("added by a result handler", measure(ns.calls, ns.workers))


if __name__ == "__main__":
    main()
