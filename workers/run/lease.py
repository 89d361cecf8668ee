"""This worker node's liveness lease: set before the pool starts, renewed by a heartbeat thread that also reaps.

One lease per worker node (the Celery main process): `host:pid:nonce`, so a container restarted with the same
hostname and pid 1 never revives a dead node's lease. Prefork children inherit the id; every `*.started` they
append names it. The heartbeat renews the key every `heartbeat_s` with a TTL of `lease_ttl_s`; when the node dies
(SIGKILL of the whole group, a lost machine) or freezes (SIGSTOP, a VM pause), the key lapses and the reaper of any
other node re-dispatches what it held. A clean shutdown deletes the key after the pool has drained.
"""

import json
import logging
import os
import socket
import threading
from datetime import UTC, datetime

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.ids import new_id
from workers.run.reaper import Reaper

logger = logging.getLogger(__name__)

_LEASE = ""
LAST_WORD_TIMEOUT_S = 1.0
"""How long a stopping node waits for its heartbeat's last beat and for Redis to take the lease back: the store's
client retries a command for ~15 s through a Redis restart, which a node being stopped must not wait out (a compose
`down` stops Redis alongside; the lease lapses by itself after `lease_ttl_s` anyway)."""


def current() -> str:
    """This node's lease id ("" outside a worker node, e.g. in unit tests: such runs are never reaped)."""
    return _LEASE


class Heartbeat(threading.Thread):
    """Renews the lease and runs a reaper pass every `heartbeat_s`, until `stop()`."""

    def __init__(self, store: EventStore, settings: Settings, info: dict[str, object]) -> None:
        super().__init__(name="geogate-heartbeat", daemon=True)
        self.store = store
        self.settings = settings
        self.lease = str(info["lease"])
        self.info = {**info, "started_at": datetime.now(UTC).isoformat()}
        self.reaper = Reaper(store, settings, owner=self.lease)
        self._stopped = threading.Event()

    def beat(self) -> None:
        value = json.dumps({**self.info, "beat_at": datetime.now(UTC).isoformat()})
        self.store.redis.set(self.store.keys.lease(self.lease), value, px=int(self.settings.lease_ttl_s * 1000))

    def run(self) -> None:
        while not self._stopped.wait(self.settings.heartbeat_s):
            self.tick()

    def tick(self) -> None:
        """One beat and one reaper pass; a Redis outage is logged and ridden out (the next tick retries)."""
        try:
            self.beat()
            for reaped in self.reaper.run_once():
                logger.warning("reaper: %s %s run of call %s", reaped.action, reaped.stage, reaped.call_id)
        except RedisError as exc:
            logger.warning("heartbeat: Redis unavailable (%s); retrying", exc)
        except Exception:  # the heartbeat must outlive any bug in a pass
            logger.exception("heartbeat: reaper pass failed")

    def stop(self) -> None:
        """Stop beating and give the lease up: nothing runs here any more after a drained shutdown. One try, briefly:
        with Redis gone the lease lapses by itself, and the node stops at once all the same."""
        self._stopped.set()
        self.join(timeout=LAST_WORD_TIMEOUT_S)  # a beat stuck retrying an absent Redis is left to die with the node
        # from a thread of its own: resolving the name of a Redis container that is gone can take the resolver's
        # whole timeout, which no socket timeout bounds
        last_word = threading.Thread(target=self._give_up, name="geogate-lease-give-up", daemon=True)
        last_word.start()
        last_word.join(timeout=2 * LAST_WORD_TIMEOUT_S)
        if last_word.is_alive():
            logger.warning("heartbeat: Redis did not answer; lease %s lapses by itself", self.lease)

    def _give_up(self) -> None:
        client = once(self.store.redis)
        try:
            client.delete(self.store.keys.lease(self.lease))
        except RedisError:
            logger.warning("heartbeat: could not delete lease %s; it lapses by itself", self.lease)
        finally:
            client.close()


def once(client: redis.Redis) -> redis.Redis:
    """A client of the same server that tries each command once and waits at most `LAST_WORD_TIMEOUT_S`."""
    pool = client.connection_pool
    options = {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": LAST_WORD_TIMEOUT_S}
    options["socket_timeout"] = LAST_WORD_TIMEOUT_S
    kwargs = {**pool.connection_kwargs, **options}
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs))


def start(settings: Settings, queues: list[str], pool: str, concurrency: int) -> Heartbeat:
    """Take this node's lease (set at once, before the pool takes work) and start renewing it."""
    global _LEASE
    _LEASE = f"{socket.gethostname()}:{os.getpid()}:{new_id()[-8:].lower()}"
    info = {"lease": _LEASE, "host": socket.gethostname(), "pid": os.getpid(), "queues": queues, "pool": pool}
    heartbeat = Heartbeat(EventStore.from_settings(settings), settings, {**info, "concurrency": concurrency})
    try:
        heartbeat.beat()
    except RedisError as exc:
        logger.warning("heartbeat: Redis unavailable at start (%s); the thread keeps trying", exc)
    heartbeat.start()
    return heartbeat
