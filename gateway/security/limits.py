"""Per-client limits in Redis, shared by every gateway replica: calls per minute and calls in progress.

One Lua call decides and takes the slots atomically. Calls per minute is a fixed window that starts with the
client's first call; refused calls are not counted. Calls in progress are members of a sorted set scored by their
start time, so the slots of a replica that died mid-call free themselves after `stale_ms`.
"""

import time
import uuid
from dataclasses import dataclass

from redis.asyncio import Redis

from geogate.eventlog import streams
from geogate.eventlog.streams import Keys

WINDOW_S = 60
CONCURRENCY_RETRY_S = 1

_ACQUIRE = """
local rate, conc, now, slot, stale, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4],
  tonumber(ARGV[5]), tonumber(ARGV[6])
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - stale)
  if redis.call('ZCARD', KEYS[2]) + n > conc then return {0, 'concurrency', 0} end
end
if rate > 0 then
  local count = redis.call('INCRBY', KEYS[1], n)
  if count == n then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[7])) end
  if count > rate then
    redis.call('DECRBY', KEYS[1], n)
    return {0, 'rate_limit', redis.call('TTL', KEYS[1])}
  end
end
if conc > 0 then
  for i = 1, n do redis.call('ZADD', KEYS[2], now, slot .. ':' .. i) end
  redis.call('PEXPIRE', KEYS[2], stale)
end
return {1, '', 0}
"""


@dataclass(frozen=True)
class Limits:
    """The limits of one client (0: none)."""

    per_minute: int = 0
    concurrent: int = 0

    @property
    def any(self) -> bool:
        return self.per_minute > 0 or self.concurrent > 0


@dataclass(frozen=True)
class Decision:
    """Whether the calls may start; when not, why and in how many seconds to retry."""

    allowed: bool
    reason: str = ""
    retry_after_s: int = 0
    slots: tuple[str, ...] = ()


class Limiter:
    """Takes and gives back a client's call slots."""

    def __init__(self, redis: Redis, keys: Keys, stale_s: float) -> None:
        self.redis, self.keys = redis, keys
        self.stale_ms = int(stale_s * 1000)
        self._script = redis.register_script(_ACQUIRE)

    async def acquire(self, client_id: str, limits: Limits, calls: int = 1) -> Decision:
        """Count `calls` against the client's window and take as many in-progress slots, or refuse them all."""
        slot = uuid.uuid4().hex
        keys = [self.keys.rate(streams.CALLS, client_id, WINDOW_S), self.keys.in_flight(client_id)]
        argv = [limits.per_minute, limits.concurrent, int(time.time() * 1000), slot, self.stale_ms, calls, WINDOW_S]
        allowed, reason, ttl = await self._script(keys=keys, args=argv)
        if int(allowed) == 1:
            taken = tuple(f"{slot}:{i}" for i in range(1, calls + 1)) if limits.concurrent > 0 else ()
            return Decision(True, slots=taken)
        why = reason.decode() if isinstance(reason, bytes) else str(reason)
        retry = CONCURRENCY_RETRY_S if why == "concurrency" else max(1, int(ttl))
        return Decision(False, why, retry)

    async def release(self, client_id: str, decision: Decision) -> None:
        """Give back the in-progress slots `decision` took."""
        if decision.slots:
            await self.redis.zrem(self.keys.in_flight(client_id), *decision.slots)
