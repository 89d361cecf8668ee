"""Per-client limits in Redis, shared by every process on the same Redis: calls per minute and calls in progress.

One Lua call decides and takes the slots atomically. Calls per minute is a fixed window of `WINDOW_S` that starts
with the client's first call (the first count sets the window key's expiry). Whether a refused call still counts
against the window is the caller's rule (`count_refused`). Calls in progress are members of a sorted set scored by
their start time, so the slots of a process that died mid-call free themselves after `stale_s`.

The gateway limits tool calls per client with both limits and does not count refused calls; the `ask` job limits
requests per actor per minute and counts every request, refused or not.
"""

import time
import uuid
from dataclasses import dataclass
from typing import Literal

from redis.asyncio import Redis

from geogate.calls.keys import Keys

WINDOW_S = 60
CONCURRENCY_RETRY_S = 1
Reason = Literal["", "rate_limit", "concurrency"]

_ACQUIRE = """
local rate, conc, now, slot, stale, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4],
  tonumber(ARGV[5]), tonumber(ARGV[6])
local window, count_refused = tonumber(ARGV[7]), ARGV[8] == '1'
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - stale)
  if redis.call('ZCARD', KEYS[2]) + n > conc then return {0, 'concurrency', 0, 0} end
end
local count = 0
if rate > 0 then
  count = redis.call('INCRBY', KEYS[1], n)
  if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], window) end
  if count > rate then
    if not count_refused then redis.call('DECRBY', KEYS[1], n) end
    return {0, 'rate_limit', redis.call('TTL', KEYS[1]), count}
  end
end
if conc > 0 then
  for i = 1, n do redis.call('ZADD', KEYS[2], now, slot .. ':' .. i) end
  redis.call('PEXPIRE', KEYS[2], stale)
end
return {1, '', 0, count}
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
    reason: Reason = ""
    retry_after_s: int = 0
    slots: tuple[str, ...] = ()
    count: int = 0
    """Calls counted in this window so far, these included (0 without a per-minute limit)."""


class Limiter:
    """Takes and gives back a client's call slots under one scope of rate keys (`Keys.rate(scope, …)`)."""

    def __init__(
        self, redis: Redis, keys: Keys, scope: str, *, stale_s: float | None = None, count_refused: bool = False
    ) -> None:
        """`stale_s`: how long a call-in-progress slot may be held (needed for a concurrency limit);
        `count_refused`: whether a call refused for the rate still counts against the window."""
        self.redis, self.keys, self.scope = redis, keys, scope
        self.stale_ms = int(stale_s * 1000) if stale_s is not None else 0
        self.count_refused = count_refused
        self._script = redis.register_script(_ACQUIRE)

    async def acquire(self, client_id: str, limits: Limits, calls: int = 1) -> Decision:
        """Count `calls` against the client's window and take as many in-progress slots, or refuse them all."""
        if limits.concurrent > 0 and self.stale_ms <= 0:
            raise ValueError("a concurrency limit needs the limiter's stale_s")
        slot = uuid.uuid4().hex
        keys = [self.keys.rate(self.scope, client_id, WINDOW_S), self.keys.in_flight(client_id)]
        now_ms = int(time.time() * 1000)
        refused = 1 if self.count_refused else 0
        argv = [limits.per_minute, limits.concurrent, now_ms, slot, self.stale_ms, calls, WINDOW_S, refused]
        allowed, reason, ttl, count = await self._script(keys=keys, args=argv)
        if int(allowed) == 1:
            taken = tuple(f"{slot}:{i}" for i in range(1, calls + 1)) if limits.concurrent > 0 else ()
            return Decision(True, slots=taken, count=int(count))
        why = reason.decode() if isinstance(reason, bytes) else str(reason)
        if why == "concurrency":
            return Decision(False, "concurrency", CONCURRENCY_RETRY_S)
        return Decision(False, "rate_limit", max(1, int(ttl)), count=int(count))

    async def release(self, client_id: str, decision: Decision) -> None:
        """Give back the in-progress slots `decision` took."""
        if decision.slots:
            await self.redis.zrem(self.keys.in_flight(client_id), *decision.slots)
