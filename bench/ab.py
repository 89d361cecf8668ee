"""A paired A/B of two checkouts: both of `make run`'s stacks up at once, sequential `ping`s alternating between them.

Sets of runs of `overhead.py` on this 2-core machine move by a millisecond or more from one run to the next (the
host's other load), more than most changes this project weighs. Here every call of one side has a call of the other
beside it in time, so the machine's noise hits both alike. The other side runs `--tree`'s code in the same stack
shape as this checkout's, with `--tree` as its roles' PYTHONPATH and working directory (`python -m` puts the working
directory ahead of PYTHONPATH: before 2026-11-23 the roles inherited this checkout's folder, so both sides ran this
checkout's code). Make the other tree with `git worktree add /tmp/base <commit>`. Both stacks share the 2 cores, so
each side's figures are higher than `overhead.py`'s: read the difference. Against a copy of itself (an A/A run, 1,000
calls a side) p50 agreed to 0.01 ms and p99 within 0.9 ms.
With `--load S`, it measures throughput instead: 64 concurrent clients (`wrk`, as `throughput.py`) on one side then
the other, S seconds each, `--rounds` times, the side that goes first swapping every round; it prints each side's
calls/s and CPU per call (all the bench's processes: the idle stack's share is the same for both sides).
Usage: python bench/ab.py --tree /tmp/base [--calls 2000] [--tool ping] [--load 8 --rounds 6]
"""

import argparse
import asyncio
import statistics
import time
from contextlib import ExitStack
from pathlib import Path

from _report import load
from _stack import geogate_stack, percentile
from mcp import Client
from throughput import loaded, wrk


async def alternate(urls: dict[str, str], calls: int, tool: str, warmup: int = 50) -> dict[str, list[float]]:
    """`calls` timed calls on each side, the side that goes first swapping every round."""
    samples: dict[str, list[float]] = {name: [] for name in urls}
    async with Client(urls["this checkout"]) as ours, Client(urls["--tree"]) as theirs:
        clients = {"this checkout": ours, "--tree": theirs}
        order = list(clients.items())
        for n in range(warmup + calls):
            for name, client in order if n % 2 == 0 else order[::-1]:
                began = time.perf_counter()
                result = await client.call_tool(tool, {})
                elapsed = (time.perf_counter() - began) * 1000
                if result.is_error:
                    raise SystemExit(f"{tool} failed on {name}: {result.content}")
                if n >= warmup:
                    samples[name].append(elapsed)
    return samples


def under_load(urls: dict[str, str], seconds: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """(calls/s, CPU ms per call) of each side under 64 clients, `rounds` runs a side, alternating."""
    for url in urls.values():
        wrk(url, 2)  # warm-up
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in urls}
    order = list(urls.items())
    for n in range(rounds):
        for name, url in order if n % 2 == 0 else order[::-1]:
            result, spent = loaded(url, seconds)
            if result["bad"]:
                raise SystemExit(f"{int(result['bad'])} calls on {name} were errors or not a pong")
            runs[name].append((result["rate"], sum(spent.values())))
    return runs


def show_loaded(runs: dict[str, list[tuple[float, float]]], seconds: int) -> None:
    print(f"64 concurrent clients, {seconds} s a run, alternating")
    for name, values in runs.items():
        rates = ", ".join(f"{rate:.0f}" for rate, _ in values)
        rate, cpu = statistics.median(r for r, _ in values), statistics.median(ms for _, ms in values)
        print(f"  {name:14s} calls/s median {rate:6.1f} ({rates})  CPU {cpu:.2f} ms/call")
    ours, theirs = runs["this checkout"], runs["--tree"]
    ratio = statistics.median(r for r, _ in ours) / statistics.median(r for r, _ in theirs)
    cpu = statistics.median(ms for _, ms in ours) - statistics.median(ms for _, ms in theirs)
    print(f"  difference     calls/s {ratio:.3f}x  CPU {cpu:+.2f} ms/call")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--tool", default="ping")
    parser.add_argument("--load", type=int, default=0, help="seconds a run: measure calls/s under 64 clients instead")
    parser.add_argument("--rounds", type=int, default=6, help="with --load: runs a side")
    ns = parser.parse_args()
    tree = ns.tree.resolve()
    if not (tree / "gateway" / "runtime.py").is_file():
        raise SystemExit(f"--tree {tree} is not a Geogate checkout")
    print(load())
    with ExitStack() as stacks:
        urls = {
            "this checkout": stacks.enter_context(geogate_stack())[0],
            "--tree": stacks.enter_context(geogate_stack(tree=tree))[0],
        }
        if ns.load:
            runs = under_load(urls, ns.load, ns.rounds)
        else:
            samples = asyncio.run(alternate(urls, ns.calls, ns.tool))
    if ns.load:
        show_loaded(runs, ns.load)
        return
    print(f"{ns.calls} sequential {ns.tool} calls a side, alternating; --tree = {tree}")
    for name, values in samples.items():
        print(
            f"  {name:14s} p50 {statistics.median(values):6.2f} ms  p90 {percentile(values, 90):6.2f} ms  "
            f"p99 {percentile(values, 99):6.2f} ms"
        )
    ours, theirs = samples["this checkout"], samples["--tree"]
    print(
        f"  difference     p50 {statistics.median(ours) - statistics.median(theirs):+6.2f} ms  "
        f"p99 {percentile(ours, 99) - percentile(theirs, 99):+6.2f} ms"
    )


if __name__ == "__main__":
    main()
