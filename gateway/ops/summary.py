"""Reading the ops summary from Redis: the window's counters, queues, workers, streams and the rate series.

A handful of pipelined reads of fixed-size keys (the summary's totals, at most one hour of slots, one key per queue,
worker and stream): the cost does not grow with the log. The figures themselves are computed in `figures.py`.
"""

import asyncio
import json
import time
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any

import redis.asyncio as aredis
from pydantic import BaseModel, Field, ValidationError

from gateway.ops.figures import WINDOWS, Figures, callers_error, figures
from geogate.calls.keys import Keys, celery_queue_keys
from geogate.calls.projections.ops import KEEP_SLOTS, SLOT_S, Pending, field_calls, slot_of
from geogate.eventlog.keys import all_categories
from geogate.queue.message import message_event
from schemas import routes

SUM_HASHES = files("gateway.ops").joinpath("sum_hashes.lua").read_text()
SERIES_TOOLS = 8
"""The chart draws the busiest tools of the window."""
SERIES_SLOTS = {"5m": 30, "1h": KEEP_SLOTS, "all": KEEP_SLOTS}
"""How many slots the rate chart shows per window (the last hour for the whole log)."""
LAG_CAP = 10_000
"""Lag is counted up to this many events per stream (more reads as "10000+")."""
SEEN_S = 300
"""A worker known only from the log is listed while its last event is younger than this."""


class QueueRow(BaseModel):
    queue: str
    depth: int
    oldest_age_s: float | None = None
    """Age of the oldest waiting job (from the time its event was appended)."""


class WorkerRow(BaseModel):
    """A worker process: from its liveness key (lease) when it has one, else as last seen in the log."""

    name: str
    source: str
    """`lease` (a live heartbeat) or `log` (its last event, no lease found)."""
    queues: list[str] = Field(default_factory=list)
    pool: str = ""
    concurrency: int | None = None
    age_s: float | None = None
    """Seconds since its last heartbeat (lease) or last event (log)."""
    holding: list[str] = Field(default_factory=list)
    """Ids of the calls it runs now."""


class StreamRow(BaseModel):
    stream: str
    length: int
    lag: int
    """Events the summary has not absorbed yet."""


class Series(BaseModel):
    """Finished calls per second per tool, then their failures and their caller errors per second (`failures`,
    `caller errors`), one point per slot (`t`: slot start, epoch s)."""

    t: list[int] = Field(default_factory=list)
    lines: dict[str, list[float]] = Field(default_factory=dict)


class OpsSummary(BaseModel):
    window: str
    now: str
    events: int
    """Events the summary has absorbed."""
    in_flight: int
    figures: Figures
    queues: list[QueueRow] = Field(default_factory=list)
    workers: list[WorkerRow] = Field(default_factory=list)
    streams: list[StreamRow] = Field(default_factory=list)
    series: Series = Field(default_factory=Series)

    @property
    def lag(self) -> int:
        return sum(s.lag for s in self.streams)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ints(raw: dict[Any, Any]) -> dict[str, int]:
    return {_text(k): int(v) for k, v in raw.items()}


class LeaseFinder:
    """The liveness keys' names, found by SCAN, whose cost grows with the keyspace (millions of keys on a big log).

    The first call scans; later ones answer from the last scan at once and, when it is older than `every_s`, start
    the next one in the background, so no page waits for a scan and a gateway scans at most once per `every_s`.
    """

    def __init__(self, every_s: float = 15.0) -> None:
        self.every_s, self.found_at, self.names = every_s, float("-inf"), list[bytes]()
        self._scan: asyncio.Task[None] | None = None

    async def names_of(self, client: aredis.Redis, keys: Keys) -> list[bytes]:
        if self.found_at == float("-inf"):
            await self._refresh(client, keys)
        elif time.monotonic() - self.found_at >= self.every_s and (self._scan is None or self._scan.done()):
            self._scan = asyncio.create_task(self._refresh(client, keys))
        return self.names

    async def _refresh(self, client: aredis.Redis, keys: Keys) -> None:
        self.names = [k async for k in client.scan_iter(match=keys.lease_pattern(), count=10_000)]
        self.found_at = time.monotonic()


async def read_summary(
    client: aredis.Redis,
    keys: Keys,
    window: str = "1h",
    now: float | None = None,
    leases: LeaseFinder | None = None,
) -> OpsSummary:
    """The summary for `window` ("5m", "1h" or "all") as of `now` (epoch seconds, default: the clock)."""
    now = time.time() if now is None else now
    leases = leases or LeaseFinder()
    live, last, seconds = keys.projections(), slot_of(int(now * 1_000_000)), WINDOWS[window]
    pipe = client.pipeline(transaction=False)
    for key in (live.ops_cursor(), live.ops_pending(), live.ops_workers(), live.running()):
        pipe.hgetall(key)
    if seconds is None:
        pipe.hgetall(live.ops_totals())
    else:
        slots = range(last - seconds // SLOT_S + 1, last + 1)
        window_keys = [live.ops_slot(s) for s in slots] + [live.ops_hist_slot(s) for s in slots]
        await client.register_script(SUM_HASHES)(keys=window_keys, args=[], client=pipe)
    cursor, pending, seen, running, counted = await pipe.execute()
    counters = _ints(counted) if seconds is None else _ints(dict(zip(counted[::2], counted[1::2], strict=True)))
    found = figures(counters, seconds)
    drawn = [t.tool for t in found.tools[:SERIES_TOOLS]]
    return OpsSummary(
        window=window,
        now=datetime.fromtimestamp(now, UTC).isoformat(),
        events=int(cursor.get(b"events", 0)),
        in_flight=len(pending),
        figures=found,
        queues=await read_queues(client, now),
        workers=await read_workers(client, await leases.names_of(client, keys), now, _ints(seen), pending, running),
        streams=await read_streams(client, keys, {_text(k): _text(v) for k, v in cursor.items()}),
        series=await read_series(client, keys, drawn, last, window, _callers_fields(counters, drawn)),
    )


def _callers_fields(counters: dict[str, int], tools: list[str]) -> list[str]:
    """The window's error counters of `tools` whose code is the caller's (the chart's range is the window's)."""
    found = []
    for name in counters:
        kind, *rest = name.split("|")
        if kind == "error" and len(rest) == 2 and rest[0] in tools and callers_error(rest[1]):
            found.append(name)
    return sorted(found)


async def read_series(
    client: aredis.Redis, keys: Keys, tools: list[str], last: int, window: str, callers: list[str] | None = None
) -> Series:
    """Finished calls per second of `tools`, their failures and their caller errors (the `callers` error counters),
    over the window's chart range."""
    slot_ids = list(range(last - SERIES_SLOTS[window] + 1, last + 1))
    fields = [field_calls(t, o) for t in tools for o in ("succeeded", "failed")]
    if not fields:
        return Series(t=[s * SLOT_S for s in slot_ids])
    pipe = client.pipeline(transaction=False)
    for slot in slot_ids:
        pipe.hmget(keys.projections().ops_slot(slot), [*fields, *(callers or [])])
    return series(slot_ids, tools, await pipe.execute())


def series(slot_ids: list[int], tools: list[str], rows: list[list[Any]]) -> Series:
    """Per slot: each tool's finished calls per second (succeeded + failed), then their failures and their caller
    errors per second (each row: succeeded and failed per tool, then the caller-error counters)."""
    counts = [[int(v) if v is not None else 0 for v in row] for row in rows]
    width = 2 * len(tools)
    lines = {tool: [(c[2 * i] + c[2 * i + 1]) / SLOT_S for c in counts] for i, tool in enumerate(tools)}
    callers = [min(sum(c[width:]), sum(c[1:width:2])) for c in counts]
    lines["failures"] = [(sum(c[1:width:2]) - mine) / SLOT_S for c, mine in zip(counts, callers, strict=True)]
    lines["caller errors"] = [mine / SLOT_S for mine in callers]
    return Series(t=[s * SLOT_S for s in slot_ids], lines=lines)


async def read_queues(client: aredis.Redis, now: float) -> list[QueueRow]:
    """Each queue's messages over its priority lists (calls and tiles), and the age of the oldest of them."""
    pipe = client.pipeline(transaction=False)
    for queue in routes.QUEUES:
        for key in celery_queue_keys(queue):
            pipe.llen(key)
            pipe.lindex(key, -1)  # LPUSH in, BRPOP out: the oldest waits at the tail
    replies = await pipe.execute()
    per_queue = 2 * len(routes.PRIORITY_STEPS)
    rows = []
    for n, queue in enumerate(routes.QUEUES):
        mine = replies[n * per_queue : (n + 1) * per_queue]
        events = [e for raw in mine[1::2] if raw and (e := message_event(raw))]
        age = max(0.0, now - min(e.ts.timestamp() for e in events)) if events else None
        rows.append(QueueRow(queue=queue, depth=sum(int(d) for d in mine[::2]), oldest_age_s=age))
    return rows


async def read_streams(client: aredis.Redis, keys: Keys, cursor: dict[str, str]) -> list[StreamRow]:
    names = [keys.stream(c) for c in all_categories()]
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.xlen(name)
        pipe.xrange(name, f"({cursor.get(name, '0-0')}", "+", count=LAG_CAP)
    replies = await pipe.execute()
    return [
        StreamRow(stream=name, length=int(length), lag=len(after))
        for name, length, after in zip(names, replies[::2], replies[1::2], strict=True)
    ]


async def read_workers(
    client: aredis.Redis,
    lease_keys: list[bytes],
    now: float,
    seen: dict[str, int],
    pending: dict[Any, Any],
    running: dict[Any, Any],
) -> list[WorkerRow]:
    """Workers with a lease first (the calls each holds from the running hash), then workers seen in the log."""
    leases = [_lease(raw) for raw in (await client.mget(lease_keys) if lease_keys else [])]
    held = _holding(pending, running)
    rows = [_lease_row(lease, now, held) for lease in leases if lease is not None]
    named = {r.name for r in rows}
    for worker, last_us in sorted(seen.items(), key=lambda kv: -kv[1]):
        age = now - last_us / 1_000_000
        if worker not in named and (age <= SEEN_S or held.get(worker)):
            rows.append(WorkerRow(name=worker, source="log", age_s=max(0.0, age), holding=held.get(worker, [])))
    return rows


def _lease(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None  # expired between SCAN and MGET
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _lease_row(lease: dict[str, Any], now: float, held: dict[str, list[str]]) -> WorkerRow:
    name = f"{lease.get('host', '?')}:{lease.get('pid', '?')}"
    beat = _epoch(lease.get("beat_at"))
    calls = held.get(str(lease.get("lease", "")), []) + held.get(name, [])
    return WorkerRow(
        name=name,
        source="lease",
        queues=[str(q) for q in lease.get("queues", [])],
        pool=str(lease.get("pool", "")),
        concurrency=lease.get("concurrency") if isinstance(lease.get("concurrency"), int) else None,
        age_s=None if beat is None else max(0.0, now - beat),
        holding=sorted(set(calls)),
    )


def _epoch(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None


def _holding(pending: dict[Any, Any], running: dict[Any, Any]) -> dict[str, list[str]]:
    """Lease id or worker name → call ids it runs: from the workers' running hash, else from unfinished calls."""
    held: dict[str, list[str]] = {}
    for call_id, raw in running.items():
        entry = _lease(raw) or {}
        for owner in {str(entry.get("lease", "")), str(entry.get("worker", ""))} - {""}:
            held.setdefault(owner, []).append(_text(call_id))
    if running:
        return held
    for call_id, raw in pending.items():
        try:
            state = Pending.loads(raw)
        except (ValueError, TypeError, ValidationError):
            continue
        if state.worker and not state.succeeded_us:
            held.setdefault(state.worker, []).append(_text(call_id))
    return held
