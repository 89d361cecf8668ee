"""What the per-call and per-workflow pages and the live tail read: aggregates' events, a trace, the newest events."""

import fnmatch
import heapq
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis

from geogate.calls.keys import Keys
from geogate.eventlog.keys import all_categories
from geogate.eventlog.store import StoredEvent, parse_entries

TRACE_LIMIT = 2000
"""Most events a page shows (a long LLM conversation's trace can be large)."""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _key(stored: StoredEvent) -> tuple[int, int]:
    ms, seq = stored.entry_id.split("-")
    return int(ms), int(seq)


async def aggregate_events(client: aredis.Redis, keys: Keys, aggregates: list[str]) -> list[StoredEvent]:
    """The events of `aggregates` (through each one's entry index), at most `TRACE_LIMIT`, in log order."""
    live = keys.projections()
    pipe = client.pipeline(transaction=False)
    for aggregate in aggregates:
        pipe.lrange(live.index(aggregate), 0, TRACE_LIMIT - 1)
    wanted = [
        (keys.stream_for(a), _text(i)) for a, ids in zip(aggregates, await pipe.execute(), strict=True) for i in ids
    ]
    pipe = client.pipeline(transaction=False)
    for stream, entry_id in wanted[:TRACE_LIMIT]:
        pipe.xrange(stream, entry_id, entry_id)
    found = [
        e
        for (stream, _), entries in zip(wanted, await pipe.execute(), strict=False)
        for e in parse_entries(stream, entries)
    ]
    return sorted(found, key=_key)


async def trace_aggregates(client: aredis.Redis, keys: Keys, trace_id: str, own: str) -> list[str]:
    """Every aggregate with events in `trace_id` (from the ops summary's trace index), `own` first."""
    found = await client.hget(keys.projections().ops_traces(), trace_id) if trace_id else None
    members = set(_text(found).split()) if found else set()
    return [own, *sorted(members - {own})]


async def hash_of(client: aredis.Redis, key: str) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in (await client.hgetall(key)).items()}


async def newest(client: aredis.Redis, keys: Keys, count: int) -> tuple[list[StoredEvent], dict[str, str]]:
    """The newest `count` events across every stream (oldest first), and each stream's last id (where to follow)."""
    streams = [keys.stream(c) for c in all_categories()]
    pipe = client.pipeline(transaction=False)
    for stream in streams:
        pipe.xrevrange(stream, count=count)
    replies = await pipe.execute()
    cursors = {s: (_text(r[0][0]) if r else "0-0") for s, r in zip(streams, replies, strict=True)}
    merged = list(heapq.merge(*[parse_entries(s, r[::-1]) for s, r in zip(streams, replies, strict=True)], key=_key))
    return merged[-count:], cursors


async def follow(client: aredis.Redis, cursors: dict[str, str], block_ms: int) -> AsyncIterator[list[StoredEvent]]:
    """Batches of new events from `cursors` on, in log order; an empty batch after each quiet `block_ms`."""
    while True:
        reply = await client.xread(cursors, count=500, block=block_ms) or []
        batch: list[StoredEvent] = []
        for name, entries in reply:
            stream = _text(name)
            cursors[stream] = _text(entries[-1][0])
            batch += parse_entries(stream, entries)
        yield sorted(batch, key=_key)


@dataclass(frozen=True)
class TailFilter:
    """The live tail's filters; empty ones match everything. `tool` needs the call's tool, looked up per call."""

    type: str = ""
    tool: str = ""
    actor: str = ""
    trace: str = ""

    def matches(self, stored: StoredEvent, tool: str) -> bool:
        event = stored.event
        return (
            (not self.type or fnmatch.fnmatchcase(event.type, self.type))
            and (not self.actor or event.actor == self.actor)
            and (not self.trace or event.trace_id == self.trace)
            and (not self.tool or tool == self.tool)
        )


class ToolNames:
    """The tool of each call aggregate, from the calls projection, remembered for the life of one tail."""

    def __init__(self, client: aredis.Redis, keys: Keys) -> None:
        self.client, self.live, self.known = client, keys.projections(), dict[str, str]()

    async def of(self, batch: list[StoredEvent]) -> list[str]:
        missing = sorted({s.event.aggregate for s in batch if s.event.aggregate.startswith("call:")} - set(self.known))
        if missing:
            pipe = self.client.pipeline(transaction=False)
            for aggregate in missing:
                pipe.hget(self.live.call(aggregate.split(":", 1)[1]), "tool")
            for aggregate, tool in zip(missing, await pipe.execute(), strict=True):
                self.known[aggregate] = _text(tool) if tool else ""
        return [self.known.get(s.event.aggregate, "") for s in batch]
