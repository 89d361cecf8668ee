"""Where the time of a sequential `ping` goes, from the client's clock and the timestamps of the call's own events.

Each call's `tool.requested` is stamped by the gateway just before its append, `tool.started` by the worker just
before its fenced append, `tool.succeeded` just after the job: all on this machine's clock, as is the client's.
Four spans per call: client → `tool.requested` (HTTP, the MCP SDK, the call plan and gate), `tool.requested` →
`tool.started` (the append with its queue message, Celery's delivery to the pool process, the worker's own set-up),
`tool.started` → `tool.succeeded` (the start's append and the job), `tool.succeeded` → client (the outcome's append,
the reader's wake-up, the answer, the SDK and HTTP back). Usage: python bench/where.py [--calls 300]
"""

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from itertools import pairwise

import redis
from _report import load
from _stack import geogate_stack, percentile
from mcp import Client

from eventlog.settings import Settings
from eventlog.store import EventStore
from eventlog.streams import CALLS

SPANS = ("client → requested", "requested → started", "started → succeeded", "succeeded → client")


async def timed(url: str, calls: int, warmup: int = 50) -> list[tuple[float, float]]:
    """Wall-clock (send, receive) of each call after the warm-up."""
    stamps = []
    async with Client(url) as client:
        for n in range(warmup + calls):
            sent = time.time()
            result = await client.call_tool("ping", {})
            if result.is_error:
                raise SystemExit(f"ping failed: {result.content}")
            if n >= warmup:
                stamps.append((sent, time.time()))
    return stamps


def event_times(redis_url: str) -> list[dict[str, float]]:
    """Per call, in the order requested: the timestamp of each of its events, by type."""
    store = EventStore(redis.Redis.from_url(redis_url), Settings().keys())
    calls: dict[str, dict[str, float]] = defaultdict(dict)
    for stored in store.read(CALLS):
        calls[stored.event.aggregate].setdefault(stored.event.type, stored.event.ts.timestamp())
    return sorted(calls.values(), key=lambda c: c["tool.requested"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    ns = parser.parse_args()
    print(load())
    with geogate_stack() as urls:
        stamps = asyncio.run(timed(urls[0], ns.calls))
        events = event_times(urls.redis)[-ns.calls :]
    spans: dict[str, list[float]] = {name: [] for name in (*SPANS, "total")}
    for (sent, received), ts in zip(stamps, events, strict=True):
        points = [sent, ts["tool.requested"], ts["tool.started"], ts["tool.succeeded"], received]
        for name, (a, b) in zip(SPANS, pairwise(points), strict=True):
            spans[name].append((b - a) * 1000)
        spans["total"].append((received - sent) * 1000)
    print(f"sequential ping through make run's stack, {ns.calls} calls: p50 / p99 of each span")
    for name, values in spans.items():
        print(f"  {name:<22} p50 {statistics.median(values):6.2f} ms   p99 {percentile(values, 99):6.2f} ms")


if __name__ == "__main__":
    main()
