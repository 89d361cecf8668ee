"""What the log and its projections take in Redis, against the limits: memory, each stream's length and age, the
snapshot, the consumers holding trimming back. `geogate status` shows it; `/metrics` exports the memory figures."""

import time

import redis
from pydantic import BaseModel

from geogate.eventlog import checkpoints, snapshots
from geogate.eventlog.keys import LogKeys, all_categories
from geogate.eventlog.store import LogStore
from geogate.settings import RetentionPolicy


def streams_of(keys: LogKeys) -> list[str]:
    """Every stream's name, in category order."""
    return [keys.stream(c) for c in all_categories()]


def log_length(client: redis.Redis, keys: LogKeys) -> int:
    """Entries in all streams now (after a trim, exactly the events the snapshot does not hold)."""
    pipe = client.pipeline(transaction=False)
    for name in streams_of(keys):
        pipe.xlen(name)
    return sum(pipe.execute())


class StreamUse(BaseModel):
    stream: str
    length: int
    oldest_age_s: float | None
    max_length: int | None
    max_age_s: int | None


class StorageReport(BaseModel):
    used_memory_bytes: int
    peak_memory_bytes: int
    max_memory_bytes: int | None
    """Redis `maxmemory`; None when unset (then the machine is the limit: Redis runs `noeviction`)."""
    streams: list[StreamUse]
    snapshot_streams: int
    live_consumers: int
    finished_ttl_s: int | None


def storage_report(store: LogStore, policy: RetentionPolicy) -> StorageReport:
    memory = store.redis.info("memory")
    now_ms = int(time.time() * 1000)
    streams = []
    for category in all_categories():
        name = store.keys.stream(category)
        oldest = store.redis.xrange(name, count=1)
        age = (now_ms - int(oldest[0][0].decode().split("-")[0])) / 1000 if oldest else None
        streams.append(StreamUse(stream=name, length=store.redis.xlen(name), oldest_age_s=age,
                                 max_length=policy.maxlen, max_age_s=policy.max_age_s))  # fmt: skip
    raw = store.redis.hgetall(store.keys.checkpoints())
    consumers = {
        field.decode().rpartition("|")[0]
        for field in raw
        if field.decode().endswith(f"|{checkpoints.SEEN}")
        and now_ms - int(raw[field]) <= policy.consumer_stale_s * 1000
    }
    return StorageReport(
        used_memory_bytes=int(memory["used_memory"]),
        peak_memory_bytes=int(memory["used_memory_peak"]),
        max_memory_bytes=int(memory.get("maxmemory", 0)) or None,
        streams=streams,
        snapshot_streams=len(snapshots.positions(store)),
        live_consumers=len(consumers),
        finished_ttl_s=policy.finished_ttl_s,
    )
