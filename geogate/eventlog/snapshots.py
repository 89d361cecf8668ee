"""Projection snapshots: the projections as they stood at given stream positions, so that trimming the log keeps
replay true (replay = the snapshot + the log after it).

`geogate trim` (and the reaper's retention pass) folds the events it is about to trim into the snapshot, under
`geogate:snap:*` with `geogate:snap-positions`, then trims (`geogate.eventlog.retention`).
"""

from typing import Any

from geogate.eventlog.keys import Namespace
from geogate.eventlog.store import LogStore


def positions(store: LogStore) -> dict[str, str]:
    """Stream → the last entry id the snapshot holds; empty when there is no snapshot."""
    return {_text(k): _text(v) for k, v in store.redis.hgetall(store.keys.snapshot_positions()).items()}


def load_into(store: LogStore, target: Namespace) -> dict[str, str]:
    """Copy the snapshot's keys into `target` (its keys' expiry included); returns the snapshot's positions."""
    source = store.keys.snapshot()
    keys = [k.decode() for k in store.redis.scan_iter(match=source.pattern(), count=1000)]
    pipe = store.redis.pipeline(transaction=False)
    for key in keys:
        pipe.copy(key, target.base + key.removeprefix(source.base), replace=True)
    pipe.execute()
    return positions(store)


SWAP = """
local ndel = tonumber(ARGV[1])
for i = 1, ndel do redis.call('DEL', KEYS[i]) end
for i = ndel + 1, #KEYS - 1, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('RENAME', KEYS[i], KEYS[i + 1])
  else redis.call('DEL', KEYS[i + 1]) end
end
return #KEYS
"""
"""Delete some keys and move others onto their new names, atomically; a source that expired meanwhile (finished
calls expire) deletes its destination instead of failing the swap."""


def swap_in(client: Any, delete: list[str], moves: list[tuple[str, str]]) -> None:
    """Run the swap on `client` (a client, or a pipeline inside MULTI)."""
    keys = [*delete, *(k for pair in moves for k in pair)]
    client.eval(SWAP, len(keys), *keys, len(delete))


def replace(store: LogStore, work: Namespace, reached: dict[str, str]) -> None:
    """Make `work` the snapshot, at positions `reached`, in one MULTI/EXEC."""
    snap = store.keys.snapshot()
    old = [k.decode() for k in store.redis.scan_iter(match=snap.pattern(), count=1000)]
    new = [k.decode() for k in store.redis.scan_iter(match=work.pattern(), count=1000)]
    pipe = store.redis.pipeline(transaction=True)
    swap_in(pipe, old, [(key, snap.base + key.removeprefix(work.base)) for key in new])
    if reached:
        pipe.hset(store.keys.snapshot_positions(), mapping=reached)
    pipe.execute()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
