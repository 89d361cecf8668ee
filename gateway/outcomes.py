"""The one shared reader of the calls stream: wakes the waiter of each call id; no per-call polling."""

import asyncio
import contextlib
import logging

import redis.asyncio as aredis
from redis.exceptions import RedisError

from schemas.codec import decode
from schemas.events import Event

logger = logging.getLogger(__name__)

_CALL_PREFIX = b"call:"


class OutcomeReader:
    """Tails the calls stream with XREAD BLOCK from one connection and routes events to waiting calls."""

    def __init__(self, client: aredis.Redis, stream: str, *, block_ms: int = 1000, batch: int = 512) -> None:
        self._redis = client
        self._stream = stream
        self._block_ms = block_ms
        self._batch = batch
        self._waiters: dict[bytes, asyncio.Queue[Event]] = {}
        self._last_id = "0-0"
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start reading after the stream's current end (calls register before they publish)."""
        newest = await self._redis.xrevrange(self._stream, count=1)
        self._last_id = newest[0][0].decode() if newest else "0-0"
        self._task = asyncio.create_task(self._run(), name="geogate-outcome-reader")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def watch(self, call_id: str) -> asyncio.Queue[Event]:
        """Register interest in a call's events; call before publishing it."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._waiters[call_id.encode()] = queue
        return queue

    def unwatch(self, call_id: str) -> None:
        self._waiters.pop(call_id.encode(), None)

    @property
    def watching(self) -> int:
        return len(self._waiters)

    async def _run(self) -> None:
        while True:
            try:
                reply = await self._redis.xread({self._stream: self._last_id}, count=self._batch, block=self._block_ms)
            except RedisError:
                logger.exception("outcome reader lost Redis; retrying from %s", self._last_id)
                await asyncio.sleep(0.5)
                continue
            for _stream, entries in reply or ():
                self._dispatch(entries)

    def _dispatch(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        for entry_id, fields in entries:
            self._last_id = entry_id.decode()
            queue = self._waiters.get(fields.get(b"aggregate", b"").removeprefix(_CALL_PREFIX))
            if queue is not None:
                queue.put_nowait(decode(fields[b"event"]))
