"""Explicit, configurable trimming of the log that never passes a registered consumer's checkpoint."""

import time

from eventlog.settings import RetentionPolicy
from eventlog.store import EventStore
from eventlog.streams import all_categories


def set_checkpoint(store: EventStore, consumer: str, stream: str, entry_id: str) -> None:
    """Record that `consumer` has absorbed `stream` up to `entry_id` (trimming stops before it)."""
    store.redis.hset(store.keys.checkpoints(), f"{consumer}|{stream}", entry_id)


def safe_minid(store: EventStore, stream: str, policy: RetentionPolicy, now_ms: int) -> str | None:
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
    for field, value in store.redis.hgetall(store.keys.checkpoints()).items():
        if field.decode().endswith(f"|{stream}"):
            target = min(target, _next(_split(value.decode())))
    return f"{target[0]}-{target[1]}"


def trim(store: EventStore, policy: RetentionPolicy, now_ms: int | None = None) -> dict[str, int]:
    """Trim every stream to the policy; returns the number of entries removed per stream."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    removed: dict[str, int] = {}
    for category in all_categories():
        stream = store.keys.stream(category)
        minid = safe_minid(store, stream, policy, now_ms)
        if minid is not None:
            # exact trimming (no "~"): the checkpoint bound must hold to the entry
            removed[stream] = int(store.redis.xtrim(stream, minid=minid, approximate=False))
    return removed


def _split(entry_id: str) -> tuple[int, int]:
    ms, seq = entry_id.split("-")
    return int(ms), int(seq)


def _next(position: tuple[int, int]) -> tuple[int, int]:
    """A checkpoint is the last absorbed id: everything after it must stay, so MINID may not exceed id+1."""
    return position[0], position[1] + 1
