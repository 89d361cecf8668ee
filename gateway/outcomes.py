"""The one shared reader of the calls stream in a gateway process: wakes the waiter of each call id, and relays
the events of a trace to whoever follows it (the chat stream); no per-call or per-request polling.

It also tails the `llm` stream, so that a chat follows its model attempts from the same reader.
"""

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator

import redis.asyncio as aredis
from redis.exceptions import RedisError

from geogate.calls import keys
from geogate.eventlog import checkpoints
from schemas.codec import decode
from schemas.events import Event

logger = logging.getLogger(__name__)

_CALL_PREFIX = b"call:"
LAST_WORD_TIMEOUT_S = 1.0
"""How long a stopping gateway tries to give its checkpoints back: the client retries a command for ~15 s through a
Redis restart, which a gateway being stopped must not wait out (a compose `down` stops Redis alongside); checkpoints
left behind go stale by themselves (`GEOGATE_RETENTION_CONSUMER_STALE_S`)."""


class OutcomeReader:
    """Tails the calls stream (and the `llm` stream) with XREAD BLOCK from one connection and routes events."""

    def __init__(
        self,
        client: aredis.Redis,
        calls: str,
        *,
        also: tuple[str, ...] = (),
        block_ms: int = 1000,
        batch: int = 512,
        checkpoints: str | None = None,
        wakes: frozenset[str] | None = None,
    ) -> None:
        self._redis = client
        self._checkpoints = checkpoints
        """Where the reader registers its position, so trimming never passes it (`geogate.eventlog.checkpoints`)."""
        self._consumer = keys.outcome_reader(socket.gethostname(), os.getpid())
        self._marked = 0.0
        self._calls = calls
        self._streams = (calls, *also)
        self._block_ms = block_ms
        self._batch = batch
        self._wakes = None if wakes is None else frozenset(kind.encode() for kind in wakes)
        """The event types a call's waiter is handed (None: all); trace followers still get every event."""
        self._waiters: dict[bytes, asyncio.Queue[Event]] = {}
        self._traces: dict[str, asyncio.Queue[Event]] = {}
        self._last_ids: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start reading after each stream's current end (calls register before they publish)."""
        for stream in self._streams:
            newest = await self._redis.xrevrange(stream, count=1)
            self._last_ids[stream] = newest[0][0].decode() if newest else "0-0"
        self._task = asyncio.create_task(self._run(), name="geogate-outcome-reader")

    async def stop(self, grace_s: float = 1.0, tries: int = 3) -> None:
        """Stop reading and give up this reader's checkpoints (it no longer holds trimming back).

        Cancelled inside redis-py's blocking read, the task was seen (under load, about once in 50 stops of
        `geogate dev`) to miss the cancel and wait on a future that never completed, which held the gateway's
        shutdown for good: it is cancelled again while it has not ended `grace_s` after a cancel, up to `tries` times.
        """
        if self._task is not None:
            for _ in range(tries):
                self._task.cancel()
                if (await asyncio.wait({self._task}, timeout=grace_s))[0]:
                    break
                logger.warning("the outcome reader missed its cancel; cancelling it again")
            if self._task.done() and not self._task.cancelled() and (error := self._task.exception()) is not None:
                logger.warning("the outcome reader had stopped on %r", error)
        if self._checkpoints is not None:
            fields = [f"{self._consumer}|{name}" for name in (*self._streams, checkpoints.SEEN)]
            with contextlib.suppress(RedisError, TimeoutError):
                async with asyncio.timeout(LAST_WORD_TIMEOUT_S):
                    await self._redis.hdel(self._checkpoints, *fields)

    def watch(self, call_id: str) -> asyncio.Queue[Event]:
        """Register interest in a call's events; call before publishing it."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._waiters[call_id.encode()] = queue
        return queue

    def unwatch(self, call_id: str) -> None:
        self._waiters.pop(call_id.encode(), None)

    @contextlib.contextmanager
    def follow_trace(self, trace_id: str) -> Iterator[asyncio.Queue[Event]]:
        """Every event of `trace_id` on the tailed streams, from now on, while the context is open."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._traces[trace_id] = queue
        try:
            yield queue
        finally:
            self._traces.pop(trace_id, None)

    @property
    def watching(self) -> int:
        return len(self._waiters)

    async def _run(self) -> None:
        while True:
            try:
                reply = await self._redis.xread(self._last_ids, count=self._batch, block=self._block_ms)
            except RedisError:
                logger.exception("outcome reader lost Redis; retrying from %s", self._last_ids)
                await asyncio.sleep(0.5)
                continue
            for stream, entries in reply or ():
                self._dispatch(stream.decode() if isinstance(stream, bytes) else stream, entries)
            await self._mark()

    async def _mark(self) -> None:
        """Register this reader's positions and liveness, at most once a second."""
        now = time.monotonic()
        if self._checkpoints is None or now - self._marked < 1.0:
            return
        self._marked = now
        marks = checkpoints.marks(self._consumer, dict(self._last_ids))
        with contextlib.suppress(RedisError):
            await self._redis.hset(self._checkpoints, mapping=dict(zip(marks[::2], marks[1::2], strict=True)))

    def _dispatch(self, stream: str, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        calls = stream == self._calls
        for entry_id, fields in entries:
            self._last_ids[stream] = entry_id.decode()
            queue = self._waiters.get(fields.get(b"aggregate", b"").removeprefix(_CALL_PREFIX)) if calls else None
            if queue is not None and self._wakes is not None and fields.get(b"type") not in self._wakes:
                queue = None
            if queue is None and not self._traces:
                continue
            event = decode(fields[b"event"])
            if queue is not None:
                queue.put_nowait(event)
            if (follower := self._traces.get(event.trace_id)) is not None:
                follower.put_nowait(event)
