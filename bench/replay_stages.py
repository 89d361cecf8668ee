"""What one event costs in each stage of a replay, in process (no Redis), over `bench/ops.py`'s event mix.

Stages: msgpack alone (the floor of any decoder of these bytes), msgspec's msgpack decoder to plain objects (a typed
decoder's floor), the pydantic decode replay uses (`schemas.codec.decode`), two pydantic alternatives (the
discriminated union's `TypeAdapter.validate_python` on the payload under `Event.model_construct`), the projectors
(`ops_for`), the fold applying their ops in memory (`geogate.eventlog.fold.Keyspace.apply`) and the ops summary's fold.
The sum bounds the events/s one core can replay before any Redis work.

Usage: python bench/replay_stages.py [--events 30000]
"""

import argparse
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgpack
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ops import one_call
from geogate.calls import ops_feed
from geogate.calls.keys import Keys
from geogate.calls.projections import ops_for
from geogate.eventlog.fold import Keyspace
from schemas.codec import decode, encode
from schemas.events import Event, event_data_adapter


class Collect:
    """Stands in for bench/ops.py's appender: keeps the events instead of appending them."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, event: Event, dedupe: str) -> None:
        self.events.append(event)


def per_event(fn: Callable[[Any], object], items: list[Any]) -> float:
    """Microseconds per item of `fn` over `items` (best of three passes)."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - began)
    return best / len(items) * 1e6


def construct(raw: dict[str, Any]) -> Event:
    fields = {**raw, "ts": datetime.fromisoformat(raw["ts"])}
    return Event.model_construct(**fields | {"data": event_data_adapter.validate_python(raw["data"])})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    n = parser.add_argument("--events", type=int, default=30_000) and parser.parse_args().events
    rng, sink = random.Random(7), Collect()
    while len(sink.events) < n:
        one_call(sink, rng, datetime.now(UTC))  # type: ignore[arg-type]
    events = sink.events
    blobs = [encode(e) for e in events]
    raws = [msgpack.unpackb(b) for b in blobs]
    keys = Keys("geogate", finished_ttl_s=7 * 86400).projections("bench")
    planned = [ops_for(e, keys) for e in events]
    keyspace = Keyspace(client=None, target=keys)  # type: ignore[arg-type]  # apply() alone never calls Redis
    keyspace.now_ms = int(time.time() * 1000)
    entries = [ops_feed.Entry("s", f"{i + 1}-0", e) for i, e in enumerate(events)]
    stages = {
        "msgpack.unpackb (floor of any decoder)": per_event(msgpack.unpackb, blobs),
        "schemas.codec.decode (msgpack + Event.model_validate; replay uses it)": per_event(decode, blobs),
        "Event.model_validate on an unpacked dict": per_event(Event.model_validate, raws),
        "Event.model_construct + TypeAdapter(union).validate_python(data)": per_event(construct, raws),
        "projectors: ops_for(event)": per_event(lambda e: ops_for(e, keys), events),
        "fold: Keyspace.apply of the event's ops": per_event(
            lambda ops: [keyspace.apply(op, b"1-0") for op in ops], planned
        ),
        "ops summary fold (ops_feed.fold), per event": per_event(
            lambda part: ops_feed.fold(part, {}, 0), [entries[i : i + 1000] for i in range(0, len(entries), 1000)]
        )
        / 1000,
    }
    decoder = msgspec.msgpack.Decoder()
    stages["msgspec.msgpack.Decoder().decode to plain objects (a typed decoder's floor)"] = per_event(
        decoder.decode, blobs
    )
    floor = stages["msgpack.unpackb (floor of any decoder)"]
    print(f"{len(events):,} events of bench/ops.py's mix (ping-shaped calls: requested, started, outcome)")
    for name, us in stages.items():
        print(f"  {name}: {us:.2f} µs/event ({us / floor:.1f}× msgpack alone)")
    used = ("schemas.codec.decode", "projectors", "fold:", "ops summary")
    total = sum(us for name, us in stages.items() if name.startswith(used))
    print(f"replay's Python per event (decode + projectors + fold + ops summary): {total:.1f} µs "
          f"= at most {1e6 / total:,.0f} events/s on one core before any Redis work")  # fmt: skip


if __name__ == "__main__":
    main()
