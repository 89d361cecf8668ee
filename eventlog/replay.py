"""`geogate replay`: rebuild every projection from the log alone, compare with the live one, and swap it in."""

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

import redis

from eventlog import ops_feed
from eventlog.store import EventStore, StoredEvent
from eventlog.streams import ProjectionKeys, all_categories

BATCH = 1000


@dataclass
class ReplayReport:
    """What a replay found: events applied, and keys that differ between the rebuilt and the live projections."""

    events: int = 0
    keys: int = 0
    missing_live: list[str] = field(default_factory=list)
    """Keys the rebuild produced that the live projections lack."""
    extra_live: list[str] = field(default_factory=list)
    """Live keys the rebuild did not produce (their events were trimmed, or they were written outside the log)."""
    different: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.missing_live or self.extra_live or self.different)


def iter_log(store: EventStore, after: dict[str, str] | None = None) -> Iterator[StoredEvent]:
    """Every event of every stream, merged into one order by entry id (time, then sequence)."""
    after = after or {}
    streams = [_iter_stream(store, c, after.get(store.keys.stream(c), "-")) for c in all_categories()]
    yield from heapq.merge(*streams, key=lambda s: _sort_key(s.entry_id))


def _iter_stream(store: EventStore, category: str, start: str) -> Iterator[StoredEvent]:
    cursor = start if start == "-" else f"({start}"
    while True:
        batch = store.read(category, cursor, "+", count=BATCH)
        yield from batch
        if len(batch) < BATCH:
            return
        cursor = f"({batch[-1].entry_id}"


def _sort_key(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split("-")
    return int(ms), int(seq)


def rebuild(store: EventStore, target: ProjectionKeys) -> tuple[int, dict[str, str]]:
    """Fold the whole log into `target` (cleared first). Returns the event count and the last id per stream."""
    _delete(store, target.pattern())
    ops = ops_feed.Rebuild(store.redis, store.keys, target)  # the ops summary, folded in the same pass
    count, last, batch = 0, {}, []
    for stored in iter_log(store):
        batch.append(stored)
        last[stored.stream] = stored.entry_id
        if len(batch) >= BATCH:
            store.project(batch, target)
            ops.add(batch)
            count, batch = count + len(batch), []
    if batch:
        store.project(batch, target)
        ops.add(batch)
        count += len(batch)
    return count, last


def compare(store: EventStore, rebuilt: ProjectionKeys, live: ProjectionKeys) -> ReplayReport:
    """Key-by-key, type-aware comparison of two projection namespaces (read in pipelined batches)."""
    new = {k.removeprefix(rebuilt.base): k for k in _scan(store, rebuilt.pattern())}
    old = {k.removeprefix(live.base): k for k in _scan(store, live.pattern())}
    report = ReplayReport(keys=len(new))
    report.missing_live = sorted(live.base + s for s in new.keys() - old.keys())
    report.extra_live = sorted(live.base + s for s in old.keys() - new.keys())
    shared = sorted(new.keys() & old.keys())
    for i in range(0, len(shared), BATCH):
        part = shared[i : i + BATCH]
        left, right = _dump_many(store, [new[s] for s in part]), _dump_many(store, [old[s] for s in part])
        report.different += [live.base + s for s, a, b in zip(part, left, right, strict=True) if a != b]
    return report


def replay(store: EventStore, *, swap: bool = True) -> ReplayReport:
    """Rebuild all projections beside the live ones, compare, and (unless `swap` is false) replace the live ones.

    Keys the rebuild does not produce are kept (their events may have been trimmed). Events appended while the
    rebuild ran are applied to the swapped-in projections afterwards.
    """
    live, scratch = store.live, store.keys.projections("rebuild")
    ops_feed.catch_up(store.redis, store.keys)  # the live summary follows the log in the gateways; bring it level
    count, last = rebuild(store, scratch)
    report = compare(store, scratch, live)
    report.events = count
    if swap:
        _swap(store, scratch, live)
        store.project(list(iter_log(store, after=last)), live)
        ops_feed.catch_up(store.redis, store.keys)
    _delete(store, scratch.pattern())
    return report


def _swap(store: EventStore, source: ProjectionKeys, target: ProjectionKeys) -> None:
    # One transaction, so readers never see half of each; over a million keys it runs for seconds, longer than
    # the client's socket timeout, hence a connection that waits as long as it takes.
    with _patient(store.redis) as client:
        pipe = client.pipeline(transaction=True)
        for key in _scan(store, source.pattern()):
            pipe.rename(key, target.base + key.removeprefix(source.base))
        pipe.execute()


def _patient(client: redis.Redis) -> redis.Redis:
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": None}
    return redis.Redis(connection_pool=type(pool)(connection_class=pool.connection_class, **kwargs))


def _scan(store: EventStore, pattern: str) -> list[str]:
    return [k.decode() for k in store.redis.scan_iter(match=pattern, count=1000)]


def _delete(store: EventStore, pattern: str) -> None:
    keys = _scan(store, pattern)
    for i in range(0, len(keys), 500):
        store.redis.delete(*keys[i : i + 500])


def _dump_many(store: EventStore, keys: list[str]) -> list[object]:
    """(type, content) of each key, in two pipelined round trips."""
    pipe = store.redis.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    kinds = [k.decode() if isinstance(k, bytes) else str(k) for k in pipe.execute()]
    readers = {
        "hash": pipe.hgetall,
        "list": lambda key: pipe.lrange(key, 0, -1),
        "set": pipe.smembers,
        "zset": lambda key: pipe.zrange(key, 0, -1, withscores=True),
        "string": pipe.get,
    }
    for key, kind in zip(keys, kinds, strict=True):
        readers.get(kind, pipe.exists)(key)
    values = pipe.execute()
    return [(kind, sorted(v) if kind == "set" else v) for kind, v in zip(kinds, values, strict=True)]
