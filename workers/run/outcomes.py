"""The one reader of the calls stream in a worker process: wakes the job thread waiting on each call id.

Jobs that call tools (`ask`'s loop, a result handler's chained calls) wait here; one thread per process tails the
stream with XREAD BLOCK, as the gateway's shared reader does, instead of one reader per call.
"""

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator

import redis
from redis.exceptions import RedisError

from schemas.codec import decode
from schemas.events import Event

logger = logging.getLogger(__name__)

OUTCOMES = (b"tool.succeeded", b"tool.failed")
_CALL_PREFIX = b"call:"


class OutcomeWaiter:
    """Tails the calls stream from where it was when started and routes each outcome to its waiting thread."""

    def __init__(self, client: redis.Redis, stream: str, *, block_ms: int = 250) -> None:
        self._redis = client
        self._stream = stream
        self._block_ms = block_ms
        self._waiters: dict[bytes, queue.SimpleQueue[Event]] = {}
        self._lock = threading.Lock()
        newest = client.xrevrange(stream, count=1)
        self._last_id = newest[0][0].decode() if newest else "0-0"
        self._thread = threading.Thread(target=self._run, name="geogate-outcome-waiter", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def watch(self, call_id: str) -> Iterator["queue.SimpleQueue[Event]"]:
        """Register interest in a call's outcome before publishing it; the inbox gets the outcome event."""
        inbox: queue.SimpleQueue[Event] = queue.SimpleQueue()
        with self._lock:
            self._waiters[call_id.encode()] = inbox
        try:
            yield inbox
        finally:
            with self._lock:
                self._waiters.pop(call_id.encode(), None)

    def _run(self) -> None:
        lost = False  # said once per outage, not every half second of it
        while True:
            try:
                reply = self._redis.xread({self._stream: self._last_id}, count=512, block=self._block_ms)
            except RedisError as exc:
                if not lost:
                    logger.warning("outcome waiter lost Redis (%s); retrying from %s", exc, self._last_id)
                lost = True
                time.sleep(0.5)
                continue
            if lost:
                logger.warning("outcome waiter reconnected to Redis; reading from %s", self._last_id)
                lost = False
            for _stream, entries in reply or ():
                self._dispatch(entries)

    def _dispatch(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        for entry_id, fields in entries:
            self._last_id = entry_id.decode()
            if fields.get(b"type") not in OUTCOMES:
                continue
            with self._lock:
                inbox = self._waiters.get(fields.get(b"aggregate", b"").removeprefix(_CALL_PREFIX))
            if inbox is not None:
                inbox.put(decode(fields[b"event"]))


_WAITERS: dict[tuple[int, str, int], OutcomeWaiter] = {}
_WAITERS_LOCK = threading.Lock()


def waiter_for(client: redis.Redis, stream: str) -> OutcomeWaiter:
    """This process's waiter for `stream` on `client`'s server (a forked child starts its own)."""
    key = (os.getpid(), stream, id(client.connection_pool))
    with _WAITERS_LOCK:
        if key not in _WAITERS:
            _WAITERS[key] = OutcomeWaiter(client, stream)
        return _WAITERS[key]
