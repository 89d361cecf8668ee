"""Keeping the ops summary current: read the log past the summary's cursor, fold it, write it with the new cursor.

Each step reads under WATCH of the cursor hash and writes in one MULTI/EXEC, so any number of processes may run it
(every gateway replica follows the log; `geogate status` and `geogate replay` catch up by themselves): a step whose
cursor moved meanwhile is discarded and retried, and no event is absorbed twice. Events are taken in entry-id order
across streams, the order `geogate replay` uses, so a rebuilt summary equals the live one.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import anyio
import redis
import redis.asyncio as aredis

from geogate.calls.keys import Keys, ProjectionKeys
from geogate.calls.projections.ops import OpsDelta, OpsFold, Pending, is_histogram
from geogate.eventlog import checkpoints
from geogate.eventlog.fold import one_key_each, write_all
from geogate.eventlog.storage import log_length, streams_of
from geogate.eventlog.store import StoredEvent, parse_entries
from schemas.events import Event

logger = logging.getLogger(__name__)

BATCH = 2000
"""Most entries read from one stream per step."""
CONSUMER = "ops"
"""Name of this consumer in the retention checkpoints (trimming never passes what the summary has not absorbed)."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split("-")
    return int(ms), int(seq)


def cursors_of(keys: Keys, raw: dict[Any, Any]) -> dict[str, str]:
    """Each stream's absorbed position from the cursor hash ("0-0" for a stream never read)."""
    stored = {_text(k): _text(v) for k, v in raw.items()}
    return {s: stored.get(s, "0-0") for s in streams_of(keys)}


@dataclass(frozen=True)
class Entry:
    """A stream entry for the fold; `event` is None when this process cannot decode it (a newer schema)."""

    stream: str
    entry_id: str
    event: Event | None


def _entries(stream: str, raw: list[Any]) -> list[Entry]:
    found = []
    for entry_id, fields in raw:
        try:
            event: Event | None = parse_entries(stream, [(entry_id, fields)])[0].event
        except (ValueError, KeyError, TypeError):  # a ValidationError too: passed over, never blocking the summary
            logger.warning("ops summary: skipping undecodable entry %s of %s", _text(entry_id), stream)
            event = None
        found.append(Entry(stream, _text(entry_id), event))
    return found


def merge(reply: Iterable[Any], count: int) -> list[Entry]:
    """One XREAD reply as a single entry-id order, cut where a full stream may hold older entries than another's.

    A stream that returned `count` entries may have more; entries of other streams past its last id wait for the
    next step, so events are always folded in the global order a replay uses.
    """
    batches = [_entries(_text(name), entries) for name, entries in reply or []]
    full = [b[-1].entry_id for b in batches if len(b) >= count]
    horizon = min(full, key=_id_key) if full else None
    merged = sorted((e for b in batches for e in b), key=lambda e: _id_key(e.entry_id))
    if horizon is not None:
        limit = _id_key(horizon)
        merged = [e for e in merged if _id_key(e.entry_id) <= limit]
    return merged


def call_ids(events: list[Entry]) -> list[str]:
    """Calls whose pending state the fold may need (those of `tool.*` and `handler.*` events)."""
    found = {getattr(e.event.data, "call_id", None) for e in events if e.event is not None}
    return sorted(c for c in found if isinstance(c, str))


def fold(events: list[Entry], pending: dict[str, Pending], slot_max: int) -> OpsDelta:
    folder = OpsFold(pending, slot_max)
    for entry in events:
        if entry.event is None:
            folder.delta.cursors[entry.stream] = entry.entry_id
        else:
            folder.apply(entry.stream, entry.entry_id, entry.event)
    return folder.delta


def trace_ids(events: list[Entry]) -> list[str]:
    return sorted({e.event.trace_id for e in events if e.event is not None})


def _traces(ids: list[str], values: list[Any]) -> dict[str, str]:
    return {t: _text(v) for t, v in zip(ids, values, strict=True) if v is not None}


def write_commands(
    delta: OpsDelta, target: ProjectionKeys, keys: Keys, traces: dict[str, str] | None = None
) -> list[tuple[Any, ...]]:
    """The writes of one step, cursor included (run inside MULTI); `traces` holds the touched traces' members."""
    commands: list[tuple[Any, ...]] = [
        ("DEL", target.ops_slot(s), target.ops_hist_slot(s)) for s in delta.expired_slots
    ]
    commands += [("HINCRBY", target.ops_totals(), f, n) for f, n in delta.totals.items() if n]
    for slot, counts in delta.slots.items():
        for name, n in counts.items():
            key = target.ops_hist_slot(slot) if is_histogram(name) else target.ops_slot(slot)
            commands += [("HINCRBY", key, name, n)] if n else []
    for call_id, state in delta.pending.items():
        if state is None:
            commands.append(("HDEL", target.ops_pending(), call_id))
        else:
            commands.append(("HSET", target.ops_pending(), call_id, state.dumps()))
    if delta.workers:
        commands.append(("HSET", target.ops_workers(), *[x for w, ts in delta.workers.items() for x in (w, ts)]))
    known = traces or {}
    for trace, aggregates in delta.traces.items():
        members = set(known.get(trace, "").split())
        if not aggregates <= members:
            commands.append(("HSET", target.ops_traces(), trace, " ".join(sorted(members | aggregates))))
    positions = [x for stream, entry in delta.cursors.items() for x in (stream, entry)]
    commands.append(("HSET", target.ops_cursor(), *positions, "slot_max", delta.slot_max))
    commands.append(("HINCRBY", target.ops_cursor(), "events", delta.events))
    if target == keys.projections():  # the live summary guards retention; a replay's scratch copy does not
        commands.append(("HSET", keys.checkpoints(), *checkpoints.marks(CONSUMER, delta.cursors)))
    return commands


def _pending(ids: list[str], values: list[Any]) -> dict[str, Pending]:
    return {c: Pending.loads(v) for c, v in zip(ids, values, strict=True) if v is not None}


def _slot_max(raw: dict[Any, Any]) -> int:
    value = raw.get(b"slot_max", raw.get("slot_max"))
    return int(value) if value is not None else 0


def step(client: redis.Redis, keys: Keys, target: ProjectionKeys | None = None, count: int = BATCH) -> int:
    """Absorb the next events into the summary under `target` (default: the live one); returns how many."""
    target = target or keys.projections()
    while True:
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(target.ops_cursor())
                raw = pipe.hgetall(target.ops_cursor())
                events = merge(pipe.xread(cursors_of(keys, raw), count=count), count)
                if not events:
                    return 0
                ids, traced = call_ids(events), trace_ids(events)
                loaded = _pending(ids, pipe.hmget(target.ops_pending(), ids) if ids else [])
                traces = _traces(traced, pipe.hmget(target.ops_traces(), traced) if traced else [])
                delta = fold(events, loaded, _slot_max(raw))
                pipe.multi()
                for command in write_commands(delta, target, keys, traces):
                    pipe.execute_command(*command)
                pipe.execute()
                return len(events)
            except redis.WatchError:
                continue


class Rebuild:
    """The summary folded into a scratch namespace by `geogate replay`, in the same pass as the other projections.

    One writer and a fresh namespace: the pending calls stay in memory and no cursor needs watching.
    """

    def __init__(self, client: redis.Redis, keys: Keys, target: ProjectionKeys) -> None:
        self.client, self.keys, self.target = client, keys, target
        self.pending: dict[str, Pending] = {}
        self.slot_max = 0

    @classmethod
    def resume(cls, client: redis.Redis, keys: Keys, target: ProjectionKeys) -> "Rebuild":
        """Go on from the summary already in `target` (a snapshot copied there): its pending calls and slots."""
        rebuild = cls(client, keys, target)
        rebuild.pending = {_text(k): Pending.loads(v) for k, v in client.hgetall(target.ops_pending()).items()}
        rebuild.slot_max = _slot_max(client.hgetall(target.ops_cursor()))
        return rebuild

    def add(self, events: list[StoredEvent]) -> None:
        entries = [Entry(s.stream, s.entry_id, s.event) for s in events]
        traced = trace_ids(entries)
        traces = _traces(traced, self.client.hmget(self.target.ops_traces(), traced) if traced else [])
        delta = fold(entries, self.pending, self.slot_max)
        for call_id in [c for c, state in delta.pending.items() if state is None and c not in self.pending]:
            del delta.pending[call_id]  # begun and ended within the batch: never written, nothing to delete
        for call_id, state in delta.pending.items():
            if state is None:
                self.pending.pop(call_id, None)
            else:
                self.pending[call_id] = state
        self.slot_max = delta.slot_max
        write_all(self.client, one_key_each(write_commands(delta, self.target, self.keys, traces)))


def catch_up(client: redis.Redis, keys: Keys, target: ProjectionKeys | None = None, *, bounded: bool = False) -> int:
    """Absorb everything appended so far; returns the number of events absorbed.

    `bounded`: stop after as many events as the log held when it began (the summary need not be further behind),
    so that appends arriving without pause cannot keep it chasing the log's end for ever.
    """
    limit = log_length(client, keys) if bounded else None
    total = 0
    while absorbed := step(client, keys, target):
        total += absorbed
        if limit is not None and total >= limit:
            break
    return total


async def astep(client: aredis.Redis, keys: Keys, count: int = BATCH) -> int:
    """`step` for the gateway's event loop, on the live summary."""
    target = keys.projections()
    while True:
        async with client.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(target.ops_cursor())
                raw = await pipe.hgetall(target.ops_cursor())
                events = merge(await pipe.xread(cursors_of(keys, raw), count=count), count)
                if not events:
                    return 0
                ids, traced = call_ids(events), trace_ids(events)
                loaded = _pending(ids, await pipe.hmget(target.ops_pending(), ids) if ids else [])
                traces = _traces(traced, await pipe.hmget(target.ops_traces(), traced) if traced else [])
                delta = fold(events, loaded, _slot_max(raw))
                pipe.multi()
                for command in write_commands(delta, target, keys, traces):
                    pipe.execute_command(*command)
                await pipe.execute()
                return len(events)
            except redis.WatchError:
                continue


SETTLE_S = 0.2
"""How long the live summary lets events gather before it folds them: the dashboard is at most this much later than
the log, and a busy gateway folds hundreds of events a step instead of one step per event (each step is six round
trips and a MULTI of some twenty writes on the gateway's event loop, between the calls it serves)."""


async def follow(
    client: aredis.Redis, keys: Keys, block_ms: int = 1000, settle_s: float = SETTLE_S, count: int = BATCH
) -> None:
    """Keep the live summary current until cancelled: fold, then let events gather for `settle_s` before the next
    step (at once when the step was a full batch: a backlog); when nothing came, block until any stream grows.

    A step after a step is not taken at once: under a steady load there is always an event or two more by the time a
    step ends, and chasing them made one step per call or so instead of one per `settle_s`.
    """
    while True:
        try:
            absorbed = await astep(client, keys, count)
            if absorbed >= count:
                continue
            if absorbed:
                await anyio.sleep(settle_s)
                continue
            raw = await client.hgetall(keys.projections().ops_cursor())
            if await client.xread(cursors_of(keys, raw), count=1, block=block_ms):
                await anyio.sleep(settle_s)
        except (redis.ConnectionError, redis.TimeoutError):
            logger.warning("ops summary: Redis unavailable, retrying in 1 s")
            await anyio.sleep(1)
        except Exception:  # top of a background task: the gateway keeps serving calls whatever the summary does
            logger.exception("ops summary: following the log failed; retrying in 5 s")
            await anyio.sleep(5)


class OpsSummary:
    """The ops summary as a consumer the store is handed (`geogate.eventlog.projectors.Consumer`): replay and
    retention bring it level with the log and rebuild it beside the other projections."""

    def catch_up(self, client: redis.Redis, keys: Keys, *, bounded: bool = False) -> int:
        return catch_up(client, keys, bounded=bounded)

    def step(self, client: redis.Redis, keys: Keys) -> int:
        return step(client, keys)

    def cursor(self, target: ProjectionKeys) -> str:
        return target.ops_cursor()

    def rebuild(self, client: redis.Redis, keys: Keys, target: ProjectionKeys, *, resume: bool) -> Rebuild:
        return Rebuild.resume(client, keys, target) if resume else Rebuild(client, keys, target)
