"""The calls' event store: the log's store handed the calls' key builders and read models, with the calls' reads.

`EventStore` (sync: Celery prefork children, the CLI, replay) and `AsyncEventStore` (the gateway's event loop) are
`geogate.eventlog`'s stores given `PROJECTORS`: every append updates the calls' projections and carries a tiled
call's fan-in, and replay rebuilds the projections and the ops summary.
"""

import redis
import redis.asyncio as aredis

from geogate.calls.fan_in import fan_in_ops
from geogate.calls.keys import Keys, ProjectionKeys
from geogate.calls.ops_feed import OpsSummary
from geogate.calls.projections import ops_for
from geogate.calls.projections.call_state import CallState
from geogate.eventlog.projectors import Projectors
from geogate.eventlog.store import AsyncLogStore, LogStore, blocking_pool, sync_client
from geogate.settings import Settings

PROJECTORS = Projectors(ops=ops_for, effects=fan_in_ops, consumers=(OpsSummary(),))
"""The calls' read models: the projections every append updates, the fan-in a tile's outcome carries, and the ops
summary a consumer folds."""

DEDUPE_TTL_S = 7 * 86400


class EventStore(LogStore):
    """Synchronous store of the calls (Celery workers, CLI, replay)."""

    keys: Keys
    live: ProjectionKeys

    def __init__(self, client: redis.Redis, keys: Keys | None = None, dedupe_ttl_s: int = DEDUPE_TTL_S) -> None:
        super().__init__(client, keys or Keys(), PROJECTORS, dedupe_ttl_s)

    @classmethod
    def from_settings(cls, settings: Settings) -> "EventStore":
        return cls(sync_client(settings.require_redis_url()), settings.keys(), settings.dedupe_ttl_s)

    def call_state(self, call_id: str) -> CallState | None:
        return CallState.from_hash(call_id, self.redis.hgetall(self.live.call(call_id)))


class AsyncEventStore(AsyncLogStore):
    """Asynchronous store of the calls for the gateway's event loop."""

    keys: Keys
    live: ProjectionKeys

    def __init__(self, client: aredis.Redis, keys: Keys | None = None, dedupe_ttl_s: int = DEDUPE_TTL_S) -> None:
        super().__init__(client, keys or Keys(), PROJECTORS, dedupe_ttl_s)

    @classmethod
    def from_settings(cls, settings: Settings) -> "AsyncEventStore":
        pool = blocking_pool(settings.require_redis_url(), settings.redis_max_connections)
        return cls(aredis.Redis(connection_pool=pool), settings.keys(), settings.dedupe_ttl_s)

    async def call_state(self, call_id: str) -> CallState | None:
        return CallState.from_hash(call_id, await self.redis.hgetall(self.live.call(call_id)))
