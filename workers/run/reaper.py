"""The reaper: runs whose worker's lease lapsed go back on their queue, as an event and a fresh message in one append.

Celery's Redis transport gives a dead worker's messages back only after the visibility timeout (20 minutes here),
so the log does the detecting (docs/recovery.md; Temporal's activity heartbeat timeout is the
model). Every worker node renews a lease key; `*.started` records the lease in the running index; any process may
run the reaper, and a lock lets one act at a time. A lost run is re-dispatched with `tool.redispatched`, fenced on
the lost attempt so that two reapers, or a reaper and a worker that woke up, cannot both act on it. A run that was
started `max_attempts` times and lost each time fails with `call.attempts_exhausted` instead.
"""

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from geogate.calls import keys
from geogate.calls.projections.running import RunningEntry
from geogate.calls.publish import enqueue_op, fan_in_op, follow, handler_job_op
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from geogate.queue.unacked import delivered_before
from geogate.settings import Settings
from schemas.codec import decode
from schemas.events import Event, HandlerFailed, ToolFailed, ToolRedispatched, ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate
from schemas.tools.handlers import RUN_RESULT_HANDLER
from schemas.tools.tiling import FAN_IN

logger = logging.getLogger(__name__)

EXHAUSTED = "call.attempts_exhausted"
STRANDED_BATCH = 100
"""Stranded deliveries looked at per reaper pass."""
HANDLER_EXHAUSTED = "handler.attempts_exhausted"


@dataclass(frozen=True)
class Reaped:
    """What the reaper did with one lost run."""

    call_id: str
    stage: str
    action: Literal["redispatched", "failed"]
    lost_worker: str


class Reaper:
    """One process's reaper. `run_once` acts only while this process holds the reaper lock."""

    def __init__(self, store: EventStore, settings: Settings, owner: str) -> None:
        self.store = store
        self.settings = settings
        self.owner = owner.encode()

    def run_once(self) -> list[Reaped]:
        """Re-dispatch (or fail) every run held by a lapsed lease; nothing unless this process leads."""
        if not self._lead():
            return []
        entries = [RunningEntry.parse(k, v) for k, v in self.store.redis.hgetall(self.store.live.running()).items()]
        lapsed = self._lapsed({e.lease for e in entries if e.lease})
        done = [self._recover(e) for e in entries if e.lease in lapsed] + self._stranded()
        return [r for r in done if r is not None]

    def _stranded(self) -> list[Reaped | None]:
        """Calls whose message a worker took from the queue but never started: its node died between the broker's
        delivery and `tool.started`, so no lease names them. kombu holds such a message in `unacked` until the
        visibility timeout; one delivered longer than a lease's TTL ago whose call is still queued on that very
        dispatch is re-dispatched now (a live worker starts a delivered job at once: prefetch is one per slot)."""
        cutoff = time.time() - self.settings.lease_ttl_s
        return [self._restart(args) for args in delivered_before(self.store.redis, cutoff, STRANDED_BATCH)]

    def _restart(self, args: tuple[object, ...]) -> Reaped | None:
        try:
            requested = decode(args[0])  # type: ignore[arg-type]
            data, dispatch = requested.payload(ToolRequested), int(args[1]) if len(args) > 1 else 1  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return None  # not a message of ours
        if data.tool == FAN_IN.name:
            return self._restart_fan_in(requested)
        state = self.store.call_state(data.call_id)
        if (
            data.tool == RUN_RESULT_HANDLER.name
            or state is None
            or (state.status, state.dispatch) != ("requested", dispatch)
        ):
            return None
        key = self.store.live.call(data.call_id)
        fenced = [Expect(key, "status", "in", ("requested",)), Expect(key, "dispatch", "in", (str(dispatch),))]
        again = ToolRedispatched(
            call_id=data.call_id,
            dispatch=dispatch + 1,
            lost_worker="",
            lost_lease="",
            lost_attempt="",
            reason=f"delivered to a worker over {self.settings.lease_ttl_s:g} s ago and never started",
        )
        logger.warning("call %s was delivered and never started: re-dispatching it", data.call_id)
        message = enqueue_op(requested, again.dispatch)
        dedupe = keys.redispatch_key(data.call_id, keys.stranded_attempt(dispatch))
        appended = self.store.append(follow(requested, again), dedupe, expect=fenced, effects=[message])
        return Reaped(data.call_id, "tool", "redispatched", "") if appended.new else None

    def _restart_fan_in(self, command: Event) -> Reaped | None:
        """A fan-in push a node took and died with before its start: pushed again while the call still waits for it
        (its tiles' stage), once per stranded push."""
        call_id = command.payload(ToolRequested).call_id
        key = self.store.live.call(call_id)
        if self.store.redis.hget(key, "stage") != b"tiles":
            return None  # its fan-in started since, or the call ended
        waiting = [Expect(key, "stage", "in", ("tiles",)), Expect(key, "status", "not_in", ("succeeded", "failed"))]
        reason = f"the fan-in was delivered to a worker over {self.settings.lease_ttl_s:g} s ago and never started"
        again = ToolRedispatched(
            call_id=call_id, stage="fan_in", dispatch=2, lost_worker="", lost_lease="", lost_attempt="", reason=reason
        )
        dedupe = keys.redispatch_key(call_id, f"fan-in-push-{command.id}")
        push = fan_in_op(command, call_id, again.dispatch)
        appended = self.store.append(follow(command, again), dedupe, expect=waiting, effects=[push])
        return Reaped(call_id, "fan_in", "redispatched", "") if appended.new else None

    def _lead(self) -> bool:
        lock, ttl_ms = self.store.keys.reaper_lock(), int(self.settings.lease_ttl_s * 1000)
        if self.store.redis.set(lock, self.owner, nx=True, px=ttl_ms):
            return True
        if self.store.redis.get(lock) == self.owner:
            self.store.redis.pexpire(lock, ttl_ms)
            return True
        return False

    def _lapsed(self, leases: set[str]) -> set[str]:
        ordered = sorted(leases)
        pipe = self.store.redis.pipeline(transaction=False)
        for lease in ordered:
            pipe.exists(self.store.keys.lease(lease))
        return {lease for lease, alive in zip(ordered, pipe.execute(), strict=True) if not alive}

    def _recover(self, entry: RunningEntry) -> Reaped | None:
        events = self.store.read_aggregate(call_aggregate(entry.call_id))
        if entry.stage == "handler":
            return self._recover_handler(entry, events)
        if entry.stage == "fan_in":
            return self._recover_fan_in(entry, events)
        requested = _first(events, ToolRequested)
        state = self.store.call_state(entry.call_id)
        if requested is None or state is None or state.terminal or state.attempt != entry.attempt:
            return None  # the run moved on since the index was read
        fenced = Expect(self.store.live.call(entry.call_id), "attempt", "in", (entry.attempt,))
        if state.attempts >= self.settings.max_attempts:
            failed = attempts_exhausted(entry.call_id, events, self.settings.max_attempts)
            self.store.append(follow(requested, failed), keys.outcome_key(entry.call_id), expect=fenced)
            return Reaped(entry.call_id, "tool", "failed", entry.worker)
        again = self._redispatched(entry, "tool", state.dispatch + 1)
        key = keys.redispatch_key(entry.call_id, entry.attempt)
        appended = self.store.append(
            follow(requested, again), key, expect=fenced, effects=[enqueue_op(requested, again.dispatch)]
        )
        return Reaped(entry.call_id, "tool", "redispatched", entry.worker) if appended.new else None

    def _recover_handler(self, entry: RunningEntry, events: Sequence[Event]) -> Reaped | None:
        succeeded = _first(events, ToolSucceeded)
        raw = {
            k.decode(): v.decode() for k, v in self.store.redis.hgetall(self.store.live.handler(entry.call_id)).items()
        }
        if succeeded is None or raw.get("attempt", "") != entry.attempt:  # "": held in place, not started yet
            return None
        fenced = Expect(self.store.live.handler(entry.call_id), "attempt", "in", (entry.attempt,))
        if int(raw.get("attempts", "0")) >= self.settings.max_attempts:
            failed = handler_attempts_exhausted(entry.call_id, raw, self.settings.max_attempts)
            self.store.append(follow(succeeded, failed), keys.handler_outcome_key(entry.call_id), expect=fenced)
            return Reaped(entry.call_id, "handler", "failed", entry.worker)
        again = self._redispatched(entry, "handler", int(raw.get("attempts", "0")) + 1)
        key = keys.redispatch_key(entry.call_id, entry.attempt)
        appended = self.store.append(
            follow(succeeded, again), key, expect=fenced, effects=[handler_job_op(succeeded, again.dispatch)]
        )
        return Reaped(entry.call_id, "handler", "redispatched", entry.worker) if appended.new else None

    def _recover_fan_in(self, entry: RunningEntry, events: Sequence[Event]) -> Reaped | None:
        """A tiled call's fan-in lost its worker: push the fan-in again, or fail the call when its attempts are
        used up. The parent's `attempt` is the fan-in's while it runs, so the usual fence applies."""
        requested, state = _first(events, ToolRequested), self.store.call_state(entry.call_id)
        if requested is None or state is None or state.terminal or state.attempt != entry.attempt:
            return None
        fenced = Expect(self.store.live.call(entry.call_id), "attempt", "in", (entry.attempt,))
        attempts = int(self.store.redis.hget(self.store.live.call(entry.call_id), "fan_in_attempts") or 0)
        if attempts >= self.settings.max_attempts:
            failed = fan_in_attempts_exhausted(entry.call_id, attempts, self.settings.max_attempts)
            self.store.append(follow(requested, failed), keys.outcome_key(entry.call_id), expect=fenced)
            return Reaped(entry.call_id, "fan_in", "failed", entry.worker)
        again = self._redispatched(entry, "fan_in", attempts + 1)
        key = keys.redispatch_key(entry.call_id, entry.attempt)
        push = fan_in_op(requested, entry.call_id, again.dispatch)
        appended = self.store.append(follow(requested, again), key, expect=fenced, effects=[push])
        return Reaped(entry.call_id, "fan_in", "redispatched", entry.worker) if appended.new else None

    def _redispatched(
        self, entry: RunningEntry, stage: Literal["tool", "handler", "fan_in"], dispatch: int
    ) -> ToolRedispatched:
        logger.warning("lease %s lapsed: re-dispatching the %s run of call %s", entry.lease, stage, entry.call_id)
        return ToolRedispatched(
            call_id=entry.call_id,
            stage=stage,
            dispatch=dispatch,
            lost_worker=entry.worker,
            lost_lease=entry.lease,
            lost_attempt=entry.attempt,
            reason=f"the lease of worker {entry.worker} lapsed (no heartbeat for {self.settings.lease_ttl_s:g} s)",
        )


def attempts_exhausted(call_id: str, events: Sequence[Event], max_attempts: int) -> ToolFailed:
    """The outcome of a call whose every start lost its worker: it names the call, its attempts and the workers."""
    workers = [e.payload(ToolStarted).worker for e in events if isinstance(e.data, ToolStarted)]
    message = (
        f"call {call_id} was started {len(workers)} times and its worker was lost each time "
        f"({', '.join(workers)}); it is not tried again (GEOGATE_MAX_ATTEMPTS={max_attempts})"
    )
    details = {"attempts": len(workers), "workers": list(workers)}
    return ToolFailed(call_id=call_id, code=EXHAUSTED, message=message, details=details)  # type: ignore[arg-type]


def fan_in_attempts_exhausted(call_id: str, attempts: int, max_attempts: int) -> ToolFailed:
    message = (
        f"the fan-in of tiled call {call_id} was started {attempts} times and its worker was lost each time; "
        f"it is not tried again (GEOGATE_MAX_ATTEMPTS={max_attempts})"
    )
    return ToolFailed(call_id=call_id, code=EXHAUSTED, message=message, details={"stage": "fan_in"})


def handler_attempts_exhausted(call_id: str, state: dict[str, str], max_attempts: int) -> HandlerFailed:
    attempts = state.get("attempts", "0")
    message = (
        f"the result handler of call {call_id} was started {attempts} times and its worker was lost each time; "
        f"it is not tried again (GEOGATE_MAX_ATTEMPTS={max_attempts})"
    )
    language = state.get("language") or "python"
    return HandlerFailed(call_id=call_id, code=HANDLER_EXHAUSTED, message=message, language=language)  # type: ignore[arg-type]


def _first(events: Sequence[Event], kind: type) -> Event | None:
    return next((e for e in events if isinstance(e.data, kind)), None)
