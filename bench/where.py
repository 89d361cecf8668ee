"""Where the time of a sequential `ping` goes, from the client's clock and the timestamps of the call's own events.

Each call's `tool.requested` is stamped by the gateway just before its append, `tool.started` by the worker just
before its fenced append, `tool.succeeded` just after the job: all on this machine's clock, as is the client's.
Four spans per call: client → `tool.requested` (HTTP, the MCP SDK, the call plan and gate), `tool.requested` →
`tool.started` (the append with its queue message, Celery's delivery to the pool process, the worker's own set-up),
`tool.started` → `tool.succeeded` (the start's append and the job), `tool.succeeded` → client (the outcome's append,
the reader's wake-up, the answer, the SDK and HTTP back). The same spans are measured for the same ping behind one
Celery hop with the log's three appends and nothing else of Geogate's (bench/hop.py's logged hop, bench/_hoplog.py),
so each span shows what Geogate's own code adds to it. Usage: python bench/where.py [--calls 300]
"""

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from itertools import pairwise

import msgpack
import redis
from _hoplog import STREAM
from _report import load
from _stack import geogate_stack, percentile
from hop import hop_stack
from mcp import Client

from geogate.calls.keys import CALLS
from geogate.calls.store import EventStore
from geogate.settings import Settings

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


def hop_event_times(redis_url: str) -> list[dict[str, float]]:
    """The same for the logged hop's log (bench/_hoplog.py: msgpack maps stamped with `time.time()`)."""
    calls: dict[str, dict[str, float]] = defaultdict(dict)
    for _, fields in redis.Redis.from_url(redis_url).xrange(STREAM):
        event = msgpack.unpackb(fields[b"event"], raw=False)
        calls[event["call_id"]].setdefault(event["type"], event["ts"])
    return sorted(calls.values(), key=lambda c: c["tool.requested"])


def spans(stamps: list[tuple[float, float]], events: list[dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in (*SPANS, "total")}
    for (sent, received), ts in zip(stamps, events, strict=True):
        points = [sent, ts["tool.requested"], ts["tool.started"], ts["tool.succeeded"], received]
        for name, (a, b) in zip(SPANS, pairwise(points), strict=True):
            out[name].append((b - a) * 1000)
        out["total"].append((received - sent) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    ns = parser.parse_args()
    print(load())
    with geogate_stack() as urls:
        ours = spans(asyncio.run(timed(urls[0], ns.calls)), event_times(urls.redis)[-ns.calls :])
    with hop_stack(logged=True) as hop:
        floor = spans(asyncio.run(timed(hop, ns.calls)), hop_event_times(hop.redis)[-ns.calls :])
    print(f"sequential ping, {ns.calls} calls: p50 (p99) of each span, ms")
    print(f"  {'span':<22} {'make run':>16} {'hop + the log':>16} {'Geogate adds':>13}")
    for name in ours:
        a, b = ours[name], floor[name]
        added = statistics.median(a) - statistics.median(b)
        print(
            f"  {name:<22} {statistics.median(a):7.2f} ({percentile(a, 99):6.2f}) "
            f"{statistics.median(b):7.2f} ({percentile(b, 99):6.2f}) {added:+12.2f}"
        )


if __name__ == "__main__":
    main()
