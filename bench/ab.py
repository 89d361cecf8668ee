"""A paired A/B of two checkouts: both of `make run`'s stacks up at once, sequential `ping`s alternating between them.

Unpaired runs of `overhead.py` move from one run to the next with the host's other load, by more than most changes
weigh. Here every call of one side has a call of the other beside it in time, so the machine's noise hits both alike.
The other side runs `--tree`'s code in the same stack shape as this checkout's, with `--tree` as its roles'
PYTHONPATH and working directory (`python -m` puts the working directory ahead of PYTHONPATH, so a role started in
this checkout's folder would run this checkout's code). Make the other tree with `git worktree add /tmp/base
<commit>`. Both stacks share the machine's cores, so each side's figures are higher than `overhead.py`'s: read the
difference; an A/A run (`--tree` a copy of this checkout) shows the noise left.
With `--load S`, it measures throughput instead: 64 concurrent clients (`wrk`, as `throughput.py`) on one side then
the other, S seconds each, `--rounds` times, the side that goes first swapping every round; it prints each side's
calls/s and CPU per call (all the bench's processes: the idle stack's share is the same for both sides), and each
role's CPU per call (medians of the runs) beside the other side's.
Each mode runs in two halves, the two stacks started again for the second in the other order: under load, the stack
started first runs slower than the other, and the two orders cancel that out.
Usage: python bench/ab.py --tree /tmp/base [--calls 2000] [--tool ping] [--args JSON] [--load 8 --rounds 6]
"""

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from _report import load
from _stack import geogate_stack, percentile
from mcp import Client
from throughput import loaded, wrk


async def alternate(
    urls: dict[str, str], calls: int, tool: str, args: dict[str, Any], warmup: int = 50
) -> dict[str, list[float]]:
    """`calls` timed calls on each side, the side that goes first swapping every round."""
    samples: dict[str, list[float]] = {name: [] for name in urls}
    async with Client(urls["this checkout"]) as ours, Client(urls["--tree"]) as theirs:
        clients = {"this checkout": ours, "--tree": theirs}
        order = list(clients.items())
        for n in range(warmup + calls):
            for name, client in order if n % 2 == 0 else order[::-1]:
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                elapsed = (time.perf_counter() - began) * 1000
                if result.is_error:
                    raise SystemExit(f"{tool} failed on {name}: {result.content}")
                if n >= warmup:
                    samples[name].append(elapsed)
    return samples


def under_load(urls: dict[str, str], seconds: int, rounds: int) -> dict[str, list[tuple[float, dict[str, float]]]]:
    """(calls/s, each role's CPU ms per call) of each side under 64 clients, `rounds` runs a side, alternating."""
    for url in urls.values():
        wrk(url, 2)  # warm-up
    runs: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name in urls}
    order = list(urls.items())
    for n in range(rounds):
        for name, url in order if n % 2 == 0 else order[::-1]:
            result, spent = loaded(url, seconds)
            if result["bad"]:
                raise SystemExit(f"{int(result['bad'])} calls on {name} were errors or not a pong")
            runs[name].append((result["rate"], spent))
    return runs


def _role_medians(values: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    roles = {role for _, spent in values for role in spent}
    return {role: statistics.median(spent.get(role, 0.0) for _, spent in values) for role in sorted(roles)}


def show_loaded(runs: dict[str, list[tuple[float, dict[str, float]]]], seconds: int) -> None:
    """Each side's calls/s and CPU per call (all of the bench's processes, then each role: medians of the runs)."""
    print(f"64 concurrent clients, {seconds} s a run, alternating")
    rate = {name: statistics.median(r for r, _ in values) for name, values in runs.items()}
    cpu = {name: statistics.median(sum(s.values()) for _, s in values) for name, values in runs.items()}
    for name, values in runs.items():
        rates = ", ".join(f"{r:.0f}" for r, _ in values)
        print(f"  {name:14s} calls/s median {rate[name]:6.1f} ({rates})  CPU {cpu[name]:.2f} ms/call")
    ours, theirs = runs["this checkout"], runs["--tree"]
    ratio, more = rate["this checkout"] / rate["--tree"], cpu["this checkout"] - cpu["--tree"]
    print(f"  difference     calls/s {ratio:.3f}x  CPU {more:+.2f} ms/call")
    mine, other = _role_medians(ours), _role_medians(theirs)
    for role in sorted(mine.keys() | other.keys(), key=lambda r: -mine.get(r, 0.0)):
        a, b = mine.get(role, 0.0), other.get(role, 0.0)
        print(f"    {role:42s} {a:6.2f}  {b:6.2f}  {a - b:+6.2f} ms/call")


STALL_MS = 50.0
"""A sequential call this slow was held up by something other than its own path (a garbage collector's full pass,
the host): counted apart, since p99 of a few thousand calls does not see a stall or two."""


@contextmanager
def stacks_in_order(tree: Path, ours_first: bool) -> Iterator[dict[str, str]]:
    """Both sides' stacks, this checkout's started first or second."""
    sides: list[tuple[str, Path | None]] = [("this checkout", None), ("--tree", tree)]
    with ExitStack() as stacks:
        yield {
            name: stacks.enter_context(geogate_stack(tree=code))[0] for name, code in sides[:: 1 if ours_first else -1]
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--tool", default="ping")
    parser.add_argument("--args", type=json.loads, default={}, help="the tool's arguments as JSON, e.g. a handler")
    parser.add_argument("--load", type=int, default=0, help="seconds a run: measure calls/s under 64 clients instead")
    parser.add_argument("--rounds", type=int, default=6, help="with --load: runs a side")
    ns = parser.parse_args()
    tree = ns.tree.resolve()
    if not (tree / "gateway" / "runtime.py").is_file():
        raise SystemExit(f"--tree {tree} is not a Geogate checkout")
    print(load())
    runs: dict[str, list[tuple[float, dict[str, float]]]] = {"this checkout": [], "--tree": []}
    samples: dict[str, list[float]] = {"this checkout": [], "--tree": []}
    for ours_first in (True, False):  # the stack started first runs slower under load: both orders, half each
        with stacks_in_order(tree, ours_first) as urls:
            if ns.load:
                for name, values in under_load(urls, ns.load, max(1, ns.rounds // 2)).items():
                    runs[name] += values
            else:
                for name, values in asyncio.run(alternate(urls, ns.calls // 2, ns.tool, ns.args)).items():
                    samples[name] += values
    if ns.load:
        show_loaded(runs, ns.load)
        return
    print(f"{ns.calls} sequential {ns.tool} calls a side ({json.dumps(ns.args)}), alternating; --tree = {tree}")
    for name, values in samples.items():
        print(
            f"  {name:14s} p50 {statistics.median(values):6.2f} ms  p90 {percentile(values, 90):6.2f} ms  "
            f"p99 {percentile(values, 99):6.2f} ms  max {max(values):7.2f} ms  over {STALL_MS:g} ms: "
            f"{sum(v > STALL_MS for v in values)}"
        )
    ours, theirs = samples["this checkout"], samples["--tree"]
    print(
        f"  difference     p50 {statistics.median(ours) - statistics.median(theirs):+6.2f} ms  "
        f"p99 {percentile(ours, 99) - percentile(theirs, 99):+6.2f} ms"
    )


if __name__ == "__main__":
    main()
