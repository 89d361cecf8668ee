"""LogStore (sync, for Celery prefork children) and AsyncLogStore (gateway): thin I/O over one shared core.

A store is handed the read models it keeps (`geogate.eventlog.projectors.Projectors`) and the key builders of its
deployment; it knows none of them itself.
"""

import asyncio
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_result, stop_after_attempt, wait_fixed

from geogate.eventlog.append import SCRIPT, Expect, Op, Readback, script_call, stream_fields
from geogate.eventlog.errors import BlobMissing, EventLogError
from geogate.eventlog.keys import LogKeys, Namespace
from geogate.eventlog.packing import pack_with_hiredis, sync_packing
from geogate.eventlog.projectors import Projectors
from geogate.eventlog.redaction import redact_event
from schemas.codec import decode
from schemas.events import Event, OutputRef


@dataclass(frozen=True)
class AppendResult:
    """What an append did: `status` 1 appended, 0 duplicate of `entry_id`, -1 expectation number `failed` did not
    hold (then `entry_id` holds that field's current value)."""

    status: int
    entry_id: str
    readback: str | None = None
    failed: int = 0

    @property
    def new(self) -> bool:
        return self.status == 1

    @property
    def refused(self) -> bool:
        return self.status == -1


@dataclass(frozen=True)
class StoredEvent:
    """An event with its position in its stream."""

    stream: str
    entry_id: str
    event: Event


RECONNECT_RETRIES = 24
"""Retries of a command whose connection failed: with the backoff below, about 15 s in all, long enough to ride
out a Redis restart (every write Geogate makes is an idempotent append, so repeating one is safe)."""


def reconnecting(*, asynchronous: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Client options that retry through a Redis restart instead of failing the call at the first refused connect.

    The asyncio client needs the asyncio `Retry`: the synchronous one never sees an error raised inside a coroutine.
    """
    backoff = ExponentialWithJitterBackoff(base=0.05, cap=1.0)
    retry = AsyncRetry(backoff, RECONNECT_RETRIES) if asynchronous else Retry(backoff, RECONNECT_RETRIES)
    return {"retry": retry, "health_check_interval": 10, **kwargs}


def sync_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, **reconnecting(decode_responses=False, **sync_packing()))


def async_client(url: str) -> aredis.Redis:
    client = aredis.Redis.from_url(url, **reconnecting(asynchronous=True, decode_responses=False))
    pack_with_hiredis(client.connection_pool)
    return client


def blocking_pool(url: str, max_connections: int) -> aredis.BlockingConnectionPool:
    """A bounded pool that makes callers wait for a connection instead of failing under a burst of calls."""
    pool = aredis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=30, **reconnecting(asynchronous=True)
    )
    pack_with_hiredis(pool)
    return pool


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


FENCED = -2
FENCE_WAIT_S = 0.005
FENCE_TRIES = 6000
"""An append waits up to 30 s for a replay's swap (the fence's own expiry, `geogate.eventlog.replay.FENCE_MS`)."""


def _fenced(raw: Any) -> bool:
    return int(raw[0]) == FENCED


def _gave_up(state: RetryCallState) -> Any:
    raise LogFenced(FENCE_TRIES * FENCE_WAIT_S)


def _fence_retry(retrying: type[Retrying] | type[AsyncRetrying]) -> Any:
    """Appends the log refused while a replay fenced it, tried again every `FENCE_WAIT_S` until `FENCE_TRIES` in all."""
    return retrying(
        retry=retry_if_result(_fenced),
        stop=stop_after_attempt(FENCE_TRIES - 1),
        wait=wait_fixed(FENCE_WAIT_S),
        retry_error_callback=_gave_up,
    )


class LogFenced(EventLogError):
    """The log stayed fenced longer than any replay's swap should take."""

    code = "log.fenced"

    def __init__(self, waited_s: float) -> None:
        super().__init__(f"the log was fenced by a replay for {waited_s:g} s; try again")


def _parse_result(raw: list[Any]) -> AppendResult:
    status, entry_id, readback = int(raw[0]), _text(raw[1]), raw[2]
    return AppendResult(status, entry_id, None if readback in (None, False) else _text(readback), int(raw[3]))


def _expectations(expect: Expect | Sequence[Expect]) -> Sequence[Expect]:
    return (expect,) if isinstance(expect, Expect) else expect


def parse_entries(stream: str, entries: list[Any]) -> list[StoredEvent]:
    return [StoredEvent(stream, _text(eid), decode(fields[b"event"])) for eid, fields in entries]


class _Core:
    """Everything but I/O: key layout, script arguments, decoding."""

    def __init__(self, keys: LogKeys, projectors: Projectors, dedupe_ttl_s: int) -> None:
        self.keys = keys
        self.live = keys.projections()
        self.projectors = projectors
        self.dedupe_ttl_s = dedupe_ttl_s

    def _append_call(
        self, event: Event, dedupe_key: str, effects: Sequence[Op], expect: Sequence[Expect], readback: Readback | None
    ) -> tuple[list[str], list[Any]]:
        event = redact_event(event)  # no secret reaches the log or a projection
        dedupe, dedupe_field = self.keys.dedupe_slot(dedupe_key)
        call = script_call(
            mode="append",
            stream=self.keys.stream_for(event.aggregate),
            dedupe=dedupe,
            dedupe_field=dedupe_field,
            index=self.live.index(event.aggregate),
            fields=stream_fields(event, dedupe_key),
            ops=[*self.projectors.ops(event, self.live), *effects, *self.projectors.effects(event, self.live)],
            ttl=self.dedupe_ttl_s,
            expect=expect,
            readback=readback,
        )
        return call.keys, call.args

    def _project_call(self, stored: StoredEvent, target: Namespace) -> tuple[list[str], list[Any]]:
        call = script_call(
            mode="project",
            stream=stored.stream,
            dedupe=self.keys.dedupe("-"),
            index=target.index(stored.event.aggregate),
            fields=[],
            ops=self.projectors.ops(stored.event, target),
            entry_id=stored.entry_id,
        )
        return call.keys, call.args


class LogStore(_Core):
    """Synchronous store (Celery workers, CLI, replay)."""

    def __init__(self, client: redis.Redis, keys: LogKeys, projectors: Projectors, dedupe_ttl_s: int) -> None:
        super().__init__(keys, projectors, dedupe_ttl_s)
        self.redis = client
        self._script = client.register_script(SCRIPT)

    def append(
        self,
        event: Event,
        dedupe_key: str,
        *,
        effects: Sequence[Op] = (),
        expect: Expect | Sequence[Expect] = (),
        readback: Readback | None = None,
    ) -> AppendResult:
        """Append `event` unless `dedupe_key` was seen, updating projections and running `effects` atomically."""
        keys, args = self._append_call(event, dedupe_key, effects, _expectations(expect), readback)
        raw = self._script(keys=keys, args=args)
        if _fenced(raw):  # the first try stays off tenacity: it is every append's path
            time.sleep(FENCE_WAIT_S)
            raw = _fence_retry(Retrying)(lambda: self._script(keys=keys, args=args))
        return _parse_result(raw)

    def project(self, events: Sequence[StoredEvent], target: Namespace) -> None:
        """Apply already-stored events to the projections under `target` (replay), pipelined."""
        pipe = self.redis.pipeline(transaction=False)
        for stored in events:
            keys, args = self._project_call(stored, target)
            self._script(keys=keys, args=args, client=pipe)
        pipe.execute()

    def read(self, category: str, start: str = "-", end: str = "+", count: int | None = None) -> list[StoredEvent]:
        stream = self.keys.stream(category)
        return parse_entries(stream, self.redis.xrange(stream, start, end, count=count))

    def read_aggregate(self, aggregate: str) -> list[Event]:
        """The events of one aggregate, in append order (via the aggregate index)."""
        ids = [_text(i) for i in self.redis.lrange(self.live.index(aggregate), 0, -1)]
        if not ids:
            return []
        stream = self.keys.stream_for(aggregate)
        pipe = self.redis.pipeline(transaction=False)
        for entry_id in ids:
            pipe.xrange(stream, entry_id, entry_id)
        return [e.event for entries in pipe.execute() for e in parse_entries(stream, entries)]

    def hash_strings(self, key: str) -> dict[str, str]:
        """A projection hash with its fields and values decoded."""
        return {_text(k): _text(v) for k, v in self.redis.hgetall(key).items()}

    def put_blob(self, data: bytes, ttl_s: int, media_type: str = "application/json") -> OutputRef:
        digest = hashlib.sha256(data).hexdigest()
        self.redis.set(self.keys.blob(digest), data, ex=ttl_s)
        return OutputRef(uri=f"blob://sha256:{digest}", size=len(data), sha256=digest, media_type=media_type)

    def get_blob(self, ref: OutputRef) -> bytes:
        data = self.redis.get(self.keys.blob(ref.sha256))
        if data is None:
            raise BlobMissing(ref.uri)
        return bytes(data)

    def value_of(self, inline: Any, ref: OutputRef | None) -> Any:
        """A result or handler value: `inline`, or the JSON behind `ref` when it was stored as a blob.

        Raises:
            BlobMissing: the blob has expired.
        """
        return inline if ref is None else json.loads(self.get_blob(ref))


class AsyncLogStore(_Core):
    """Asynchronous store for the gateway's event loop."""

    def __init__(self, client: aredis.Redis, keys: LogKeys, projectors: Projectors, dedupe_ttl_s: int) -> None:
        super().__init__(keys, projectors, dedupe_ttl_s)
        self.redis = client
        self._script = client.register_script(SCRIPT)

    async def append(
        self,
        event: Event,
        dedupe_key: str,
        *,
        effects: Sequence[Op] = (),
        expect: Expect | Sequence[Expect] = (),
        readback: Readback | None = None,
    ) -> AppendResult:
        """Append `event` unless `dedupe_key` was seen, updating projections and running `effects` atomically."""
        keys, args = self._append_call(event, dedupe_key, effects, _expectations(expect), readback)
        raw = await self._script(keys=keys, args=args)
        if _fenced(raw):  # the first try stays off tenacity: it is every append's path
            await asyncio.sleep(FENCE_WAIT_S)

            async def again() -> Any:
                return await self._script(keys=keys, args=args)

            raw = await _fence_retry(AsyncRetrying)(again)
        return _parse_result(raw)

    async def get_blob(self, ref: OutputRef) -> bytes:
        data = await self.redis.get(self.keys.blob(ref.sha256))
        if data is None:
            raise BlobMissing(ref.uri)
        return bytes(data)

    async def value_of(self, inline: Any, ref: OutputRef | None) -> Any:
        """A result or handler value: `inline`, or the JSON behind `ref` when it was stored as a blob.

        Raises:
            BlobMissing: the blob has expired.
        """
        return inline if ref is None else json.loads(await self.get_blob(ref))

    async def aclose(self) -> None:
        await self.redis.aclose()
