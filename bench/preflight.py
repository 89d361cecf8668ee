"""Preflight: client requests per gated call, and the added latency of a cache hit.

The hit path is what every gated call pays once justified: building the keys from the arguments and one
pipelined read of the cache. It is measured in-process against a private redis-server, beside the cost of the
same call's other gateway work (validation and the append of `tool.requested`) for scale.
Usage: python bench/preflight.py [--calls 2000]
"""

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from _stack import percentile

from gateway.preflight.flow import preflight
from gateway.preflight.gate import Gate
from gateway.preflight.persist import persist
from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import AsyncEventStore
from geogate.cli.dev import Children, start_redis
from geogate.settings import Settings
from schemas.call_plan import plan_call
from schemas.ids import new_id
from schemas.preflight.justification import PersistItem
from schemas.tools import TOOLS
from schemas.validation import validate

GOOD = {
    "intent": "bench",
    "alternatives": [{"method": "a", "why_not": "b"}],
    "choice": {"method": "c", "rationale": "d", "tradeoffs": "e"},
    "confidence": "high",
}
ARGS = {"uri": "dem.tif", "output": "out.tif", "dst_crs": "EPSG:3035", "resampling": "bilinear"}


async def timed(fn, calls: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - began) * 1000)
    return samples


async def run(url: str, calls: int) -> None:
    settings = Settings(redis_url=url)
    store = AsyncEventStore.from_settings(settings)
    gate, spec = Gate(store, settings), TOOLS["raster_reproject"]
    plan = plan_call(spec, ARGS)
    await gate.hint(spec, plan.needed, "bench")
    items = [PersistItem(hash=n.hash, domain=n.domain, justification=GOOD) for n in plan.needed]
    await persist(gate, items, actor="bench")

    async def hit() -> None:
        outcome = await preflight(gate, plan, None, "bench")
        assert outcome.answer is None

    async def publish() -> None:
        call_id = new_id()
        event = request_event(spec, validate(spec, ARGS).args, call_id=call_id, actor="bench")
        await store.append(event, keys.requested_key(call_id), effects=[])

    await timed(hit, 100)
    hits, publishes = await timed(hit, calls), await timed(publish, calls)
    p50, p99 = statistics.median(hits), percentile(hits, 99)
    print(f"cache hit (keys + one pipelined read)   p50 {p50:.3f} ms  p99 {p99:.3f} ms")
    print(f"for scale: validate + append request    p50 {statistics.median(publishes):.3f} ms")
    print(f"added by a cache hit over an ungated call: p50 {statistics.median(hits):.3f} ms (target <= 0.5)")
    print(
        "client requests for a gated call: 3 without sampling (hint, persist_justifications, retry), "
        "1 with a sampling client, 1 once cached (gdal-mcp 1.1.3: 5 tool calls + 2 prompt fetches)"
    )
    await store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    ns = parser.parse_args()
    children = Children()
    try:
        url = start_redis(Settings(data_dir=Path(tempfile.mkdtemp(prefix="geogate-bench-"))), children)
        asyncio.run(run(url, ns.calls))
    finally:
        children.stop()


if __name__ == "__main__":
    main()
