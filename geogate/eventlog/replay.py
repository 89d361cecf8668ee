"""`geogate replay`: rebuild every projection from the snapshot and the log after it, compare with the live one,
and swap it in, while calls keep arriving.

The rebuild folds the snapshot's positions onwards into a scratch namespace, catches up with the log, and swaps
under a fence: the streams are WATCHed, the last events are folded while watched, and the renames run in one
MULTI/EXEC that fails if anything was appended meanwhile (then it catches up and tries again). So no event is lost
and none is applied twice, whatever arrives during the replay.
"""

import gc
import heapq
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis

from geogate.eventlog import snapshots
from geogate.eventlog.fold import Keyspace, write_all
from geogate.eventlog.keys import Namespace, all_categories
from geogate.eventlog.projectors import Batches
from geogate.eventlog.storage import log_length
from geogate.eventlog.store import LogStore, StoredEvent

READ_BATCH = 10_000
"""Entries per XRANGE, and events folded in memory between two flushes of the changed keys."""
SETTLE_ROUNDS = 5
"""`--check` under load: a key that differs is compared again after catching up, this many times at most."""
SETTLE_STEPS = 20
SWAP_ROUNDS = 50
FENCE_MS = 30_000
"""The fence lapses by itself after this, should a replay die while holding it."""


Progress = Callable[[str, int, int], None]
"""How a replay reports its way, `(phase, done, total)`: `rebuild` after each batch (events folded, of the log's length
when the fold began, or more once calls arrived meanwhile), `compare` after each script call (key pairs compared), and
`swap` once the keys are in (keys swapped, of the same)."""


def quiet(phase: str, done: int, total: int) -> None:
    """A replay that reports nothing (the default)."""


class ReplayBusy(RuntimeError):
    """The log never stood still long enough to swap (SWAP_ROUNDS tries); the live projections are untouched."""


@dataclass
class ReplayReport:
    """What a replay found: events applied, and keys that differ between the rebuilt and the live projections."""

    events: int = 0
    keys: int = 0
    missing_live: list[str] = field(default_factory=list)
    """Keys the rebuild produced that the live projections lack."""
    extra_live: list[str] = field(default_factory=list)
    """Live keys the rebuild did not produce (written outside the log, or left by a bug)."""
    different: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    """The projection families (`call`, `idx`, `metrics`, `ops`, …) of the keys that differ, missing or extra."""
    from_snapshot: bool = False

    @property
    def identical(self) -> bool:
        return not (self.missing_live or self.extra_live or self.different)

    @property
    def suspects(self) -> list[str]:
        return sorted({*self.missing_live, *self.extra_live, *self.different})


def iter_log(
    store: LogStore, after: dict[str, str] | None = None, before: dict[str, str] | None = None
) -> Iterator[StoredEvent]:
    """Every event of every stream after `after` and before `before` (per stream, both exclusive), merged into one
    order by entry id."""
    after, before = after or {}, before or {}
    streams = [
        _iter_stream(store, c, after.get(store.keys.stream(c), "-"), before.get(store.keys.stream(c)))
        for c in all_categories()
    ]
    yield from heapq.merge(*streams, key=lambda s: _sort_key(s.entry_id))


def _iter_stream(store: LogStore, category: str, start: str, stop: str | None) -> Iterator[StoredEvent]:
    cursor, end = (start if start == "-" else f"({start}"), ("+" if stop is None else f"({stop}")
    while True:
        batch = store.read(category, cursor, end, count=READ_BATCH)
        yield from batch
        if len(batch) < READ_BATCH:
            return
        cursor = f"({batch[-1].entry_id}"


def ends_now(store: LogStore) -> dict[str, str]:
    """Per stream, the position just after its newest entry (an exclusive bound for `iter_log`)."""
    pipe = store.redis.pipeline(transaction=False)
    names = [store.keys.stream(c) for c in all_categories()]
    for name in names:
        pipe.xrevrange(name, count=1)
    ends = {}
    for name, newest in zip(names, pipe.execute(), strict=True):
        if newest:
            ms, seq = _sort_key(newest[0][0].decode())
            ends[name] = f"{ms}-{seq + 1}"
    return ends


def _sort_key(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split("-")
    return int(ms), int(seq)


@dataclass
class Fold:
    """Events folded into `target` so far: where each stream stands, and the consumers' own folds (`consumers`:
    the store's consumers rebuilding into `target`)."""

    store: LogStore
    target: Namespace
    last: dict[str, str]
    consumers: list[Batches]
    events: int = 0
    expected: int = 0
    """The events the fold expects to go through (its progress' total), where it is known."""
    progress: Progress = quiet
    keyspace: Keyspace = field(init=False)
    """The projection keys being folded, over what `target` holds when the fold starts (a snapshot, or nothing)."""

    _writing: "Future[None] | None" = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.keyspace = Keyspace.over(self.store.redis, self.target, self.store.projectors.ops)

    def _written(self) -> None:
        """Wait for the batch being written, if any (its error, if it failed, is raised here)."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def advance(self, events: Iterator[StoredEvent] | None = None) -> int:
        """Fold the events after `last` up to each stream's end as it is now (or the given ones) into the target;
        returns how many, all written when it returns. Bounded: events appended meanwhile wait for the next call.

        A batch's keys are written by a thread while the next batch is read and folded (at most one batch in
        flight: `Keyspace.changes` says why that is enough), so Redis' time writing them overlaps this process'
        folding instead of adding to it."""
        count, batch = 0, []
        with gc_paused(), ThreadPoolExecutor(1, thread_name_prefix="replay-write") as writer:
            try:
                for stored in events if events is not None else iter_log(self.store, self.last, ends_now(self.store)):
                    batch.append(stored)
                    if len(batch) >= READ_BATCH:
                        count += self._apply(batch, writer)
                        batch = []
                if batch:
                    count += self._apply(batch, writer)
            finally:
                self._written()
        return count

    def _apply(self, batch: list[StoredEvent], writer: ThreadPoolExecutor) -> int:
        self.keyspace.fold(batch)
        commands = self.keyspace.changes()
        self._written()  # the batch before this one: its keys may be read back by the next fold
        self._writing = writer.submit(write_all, self.store.redis, commands)
        for consumer in self.consumers:
            consumer.add(batch)
        for stored in batch:
            self.last[stored.stream] = stored.entry_id
        self.events += len(batch)
        self.progress("rebuild", self.events, max(self.expected, self.events))
        return len(batch)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a fold runs, on again after (as it was found).

    Measured reason (`bench/ops.py`'s 1M-event log, `replay --check`): the collector ran 41,301 times
    and took 47 s of the 147 s, for no garbage: with it off the replay took 100 s and the same peak memory (499 MB,
    as with a 100k-object threshold), since a fold's objects are freed by their reference counts and make no cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rebuilding(store: LogStore, target: Namespace, resume: bool) -> list[Batches]:
    """The store's consumers, each starting a rebuild into `target` (`resume`: from the snapshot copied there)."""
    return [c.rebuild(store.redis, store.keys, target, resume=resume) for c in store.projectors.consumers]


def catch_up(store: LogStore) -> None:
    """Bring each of the store's consumers near the log's end (bounded: appends arriving without pause cannot keep
    it chasing the end)."""
    for consumer in store.projectors.consumers:
        consumer.catch_up(store.redis, store.keys, bounded=True)


def rebuild(store: LogStore, target: Namespace, progress: Progress = quiet) -> Fold:
    """The snapshot copied into `target` (cleared first), then the log after it folded in."""
    _delete(store, target.pattern())
    last = snapshots.load_into(store, target)
    consumers = rebuilding(store, target, resume=bool(last))
    expected = log_length(store.redis, store.keys)
    fold = Fold(store, target, dict(last), consumers, expected=expected, progress=progress)
    fold.advance()
    return fold


COMPARE = """
local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
local function same_pairs(a, b)
  if #a ~= #b then return false end
  local t = {}
  for i = 1, #a, 2 do t[a[i]] = a[i + 1] end
  for i = 1, #b, 2 do if t[b[i]] ~= b[i + 1] then return false end end
  return true
end
local function same_members(a, b)
  if #a ~= #b then return false end
  local t = {}
  for i = 1, #a do t[a[i]] = true end
  for i = 1, #b do if not t[b[i]] then return false end end
  return true
end
local differ = {}
for k = 1, #KEYS, 2 do
  local x, y = KEYS[k], KEYS[k + 1]
  local serialized = redis.call('DUMP', x)
  local same = serialized and serialized == redis.call('DUMP', y)
  if not same then
    local kind = redis.call('TYPE', x)['ok']
    same = kind == redis.call('TYPE', y)['ok']
    if same then
      if kind == 'hash' then same = same_pairs(redis.call('HGETALL', x), redis.call('HGETALL', y))
      elseif kind == 'list' then same = same_list(redis.call('LRANGE', x, 0, -1), redis.call('LRANGE', y, 0, -1))
      elseif kind == 'set' then same = same_members(redis.call('SMEMBERS', x), redis.call('SMEMBERS', y))
      elseif kind == 'zset' then
        same = same_list(redis.call('ZRANGE', x, 0, -1, 'WITHSCORES'), redis.call('ZRANGE', y, 0, -1, 'WITHSCORES'))
      elseif kind == 'string' then same = redis.call('GET', x) == redis.call('GET', y)
      else same = false end
    end
  end
  if not same then differ[#differ + 1] = (k + 1) / 2 end
end
return differ
"""
"""Compares pairs of keys (KEYS: rebuilt, live, rebuilt, live, …) by type and content inside Redis; returns the
numbers (1-based) of the pairs that differ. Values never cross the network: a comparison of 1M events' keys sends
their names and gets back the few that differ. Comparing pairs needs no hashing and no sorting (a digest per family
would need both, and a second pass over the families whose digest differs).

Equal `DUMP`s (type, encoding and content, serialized) mean equal keys, and a rebuilt key nearly always serializes
as its live twin (same writes in the same order); only a pair whose `DUMP`s differ (a hash's fields in another order,
another encoding, a real difference) is compared by content. Measured reason (a 1M-event log's rebuild,
100,000 pairs): 1.8 s of Redis CPU against 3.5 s comparing every pair by content; one of those pairs, and none of
20,000 sampled ones (`call`, `idx`, `ops`), had `DUMP`s that differ."""
COMPARE_PAIRS = 500
"""Key pairs per script call: a call holds Redis for about a millisecond."""


def family(keys: Namespace, key: str) -> str:
    """The projection family of a key under `keys` (`call`, `idx`, `metrics`, `ops`, `workflow`, …)."""
    return key.removeprefix(keys.base + ":").split(":", 1)[0]


def compare(
    store: LogStore,
    rebuilt: Namespace,
    live: Namespace,
    only: list[str] | None = None,
    progress: Progress = quiet,
) -> ReplayReport:
    """Type-aware comparison of two namespaces, key by key inside Redis (`COMPARE`); `only` limits it to these
    live keys."""
    if only is None:
        new = {k.removeprefix(rebuilt.base) for k in _scan(store, rebuilt.pattern())}
        old = {k.removeprefix(live.base) for k in _scan(store, live.pattern())}
    else:
        names = [k.removeprefix(live.base) for k in only]
        new = {n for n, e in zip(names, _exists(store, [rebuilt.base + n for n in names]), strict=True) if e}
        old = {n for n, e in zip(names, _exists(store, [live.base + n for n in names]), strict=True) if e}
    report = ReplayReport(keys=len(new))
    report.missing_live = sorted(live.base + s for s in new - old)
    report.extra_live = sorted(live.base + s for s in old - new)
    shared = sorted(new & old)
    script = store.redis.register_script(COMPARE)
    for i in range(0, len(shared), COMPARE_PAIRS):
        part = shared[i : i + COMPARE_PAIRS]
        pairs = [k for s in part for k in (rebuilt.base + s, live.base + s)]
        report.different += [live.base + part[int(n) - 1] for n in script(keys=pairs)]
        progress("compare", i + len(part), len(shared))
    report.families = sorted({family(live, k) for k in report.suspects})
    return report


def replay(store: LogStore, *, swap: bool = True, progress: Progress = quiet) -> ReplayReport:
    """Rebuild all projections beside the live ones, compare, and (unless `swap` is false) replace the live ones;
    `progress` hears how far it is.

    Raises:
        ReplayBusy: with `swap`, the log kept moving through every try; nothing was swapped.
    """
    live, scratch = store.live, store.keys.projections("rebuild")
    catch_up(store)  # the gateways keep the consumers level; bring them near
    fold = rebuild(store, scratch, progress)
    report = _settled(store, fold, live)
    report.events, report.from_snapshot = fold.events, bool(snapshots.positions(store))
    try:
        if swap and not any(_swap_fenced(store, fold, live) for _ in range(SWAP_ROUNDS)):
            raise ReplayBusy(f"the log moved during each of {SWAP_ROUNDS} tries to swap; run replay again")
    finally:
        _delete(store, scratch.pattern())
    return report


def _settled(store: LogStore, fold: Fold, live: Namespace) -> ReplayReport:
    """Compare; keys that differ are compared again after catching up with the log (calls may still arrive)."""
    report = compare(store, fold.target, live, progress=fold.progress)
    for _ in range(SETTLE_ROUNDS):
        if report.identical:
            break
        for consumer in store.projectors.consumers:  # the live consumers, a bounded way towards the log's end
            for _step in range(SETTLE_STEPS):
                if not consumer.step(store.redis, store.keys):
                    break
        moved = fold.advance()
        again = compare(store, fold.target, live, only=report.suspects)
        again.keys = report.keys
        if not moved and again.suspects == report.suspects:
            return again
        report = again
    return report


def _swap_fenced(store: LogStore, fold: Fold, live: Namespace) -> bool:
    """Fence the log, fold its last events, and swap in one MULTI/EXEC; True when swapped.

    While `geogate:fence` is set, appends wait (the append script refuses them and the store retries), so the
    rebuilt projections are complete when they replace the live ones. The consumers (the gateways' ops summary)
    write no event: their cursors are watched instead.
    """
    if not store.redis.set(store.keys.fence(), "replay", nx=True, px=FENCE_MS):
        return False  # another replay is swapping
    client = _patient(store.redis)
    try:
        with client.pipeline(transaction=True) as pipe:
            cursors = [c.cursor(live) for c in store.projectors.consumers]
            if cursors:
                pipe.watch(*cursors)
            fold.advance()  # complete: nothing can be appended from here until the fence goes
            source = _scan(store, fold.target.pattern())
            stale = set(_scan(store, live.pattern())) - {live.base + k.removeprefix(fold.target.base) for k in source}
            pipe.multi()
            snapshots.swap_in(pipe, sorted(stale), [(k, live.base + k.removeprefix(fold.target.base)) for k in source])
            pipe.execute()
            fold.progress("swap", len(source), len(source))
            return True
    except redis.WatchError:
        return False
    finally:
        client.close()
        store.redis.delete(store.keys.fence())


def _patient(client: redis.Redis) -> redis.Redis:
    # One transaction over every key runs for seconds on a big log, longer than the client's socket timeout.
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": None}
    return redis.Redis(connection_pool=type(pool)(connection_class=pool.connection_class, **kwargs))


def _scan(store: LogStore, pattern: str) -> list[str]:
    return [k.decode() for k in store.redis.scan_iter(match=pattern, count=1000)]


def _exists(store: LogStore, keys: list[str]) -> list[bool]:
    pipe = store.redis.pipeline(transaction=False)
    for key in keys:
        pipe.exists(key)
    return [bool(n) for n in pipe.execute()]


def _delete(store: LogStore, pattern: str) -> None:
    keys = _scan(store, pattern)
    for i in range(0, len(keys), 500):
        store.redis.delete(*keys[i : i + 500])
