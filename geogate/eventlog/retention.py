"""Trimming the log by the retention policy, after folding what it removes into the projection snapshot.

A pass: bring the shared ops summary level with the log (it reads every stream), work out per stream the oldest
entry to keep (by age and length, never past a live consumer's checkpoint), fold every event before those
positions into the snapshot, then `XTRIM MINID` exactly to them. Replay then starts from the snapshot, so
`geogate replay --check` holds after any number of trims. One pass at a time (a lock); the reaper of a worker
node runs one every `GEOGATE_RETENTION_INTERVAL_S` when a policy is set, and `geogate trim` runs one at once.
"""

import time
import uuid

from geogate.eventlog import checkpoints, snapshots
from geogate.eventlog.keys import all_categories
from geogate.eventlog.replay import Fold, catch_up, iter_log, rebuilding
from geogate.eventlog.store import LogStore
from geogate.settings import RetentionPolicy

LOCK_S = 600


def safe_minid(store: LogStore, stream: str, policy: RetentionPolicy, now_ms: int) -> str | None:
    """The oldest entry id to keep in `stream`, or None when nothing may be trimmed."""
    candidates: list[tuple[int, int]] = []
    if policy.max_age_s is not None:
        candidates.append((now_ms - policy.max_age_s * 1000, 0))
    if policy.maxlen is not None:
        newest = store.redis.xrevrange(stream, count=policy.maxlen)
        if len(newest) == policy.maxlen:
            candidates.append(_split(newest[-1][0].decode()))
    if not candidates:
        return None
    target = min(candidates)
    raw = store.redis.hgetall(store.keys.checkpoints())
    wall_ms = int(time.time() * 1000)  # liveness is judged on the clock, whatever `now_ms` the age policy uses
    for value in checkpoints.live_positions(raw, stream, wall_ms, policy.consumer_stale_s):
        target = min(target, _next(_split(value)))
    return f"{target[0]}-{target[1]}"


def trim(store: LogStore, policy: RetentionPolicy, now_ms: int | None = None) -> dict[str, int]:
    """Snapshot, then trim every stream to the policy; returns the number of entries removed per stream.

    Returns {} without trimming when another pass holds the lock.
    """
    token = uuid.uuid4().hex
    if not store.redis.set(store.keys.retention_lock(), token, nx=True, ex=LOCK_S):
        return {}
    try:
        catch_up(store)
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        cut = {}
        for category in all_categories():
            stream = store.keys.stream(category)
            if (minid := safe_minid(store, stream, policy, now_ms)) is not None:
                cut[stream] = minid
        if not cut:
            return {}
        snapshot(store, cut)
        # exact trimming (no "~"): the snapshot holds exactly the events before each cut
        return {stream: int(store.redis.xtrim(stream, minid=minid, approximate=False)) for stream, minid in cut.items()}
    finally:
        if store.redis.get(store.keys.retention_lock()) == token.encode():
            store.redis.delete(store.keys.retention_lock())


def snapshot(store: LogStore, cut: dict[str, str]) -> int:
    """Fold the events before `cut` (per stream) into the snapshot; returns how many were folded."""
    work = store.keys.projections("snapwork")
    keys = [k.decode() for k in store.redis.scan_iter(match=work.pattern(), count=1000)]
    if keys:
        store.redis.delete(*keys)
    start = snapshots.load_into(store, work)
    fold = Fold(store, work, dict(start), rebuilding(store, work, resume=bool(start)))
    folded = fold.advance(iter_log(store, after=start, before=cut))
    snapshots.replace(store, work, fold.last)
    return folded


def _split(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split("-")
    return int(ms), int(seq)


def _next(position: tuple[int, int]) -> tuple[int, int]:
    """A checkpoint is the last absorbed id: everything after it must stay, so MINID may not exceed id+1."""
    return position[0], position[1] + 1
