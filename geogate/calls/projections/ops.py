"""The ops summary: the log folded into counters and latency histograms per tool and stage, in total and per slot.

An outcome event names its call, not the call's tool, so this fold keeps a little state: `Pending`, the tool and
request time of each unfinished call. It therefore runs in a checkpointed consumer (`geogate/calls/ops_feed.py`),
not in the append script. Like every projection it reads only events (never the clock), so replay rebuilds the same
keys.

Stages of a call: `queue` (request → a worker took it, per attempt), `run` (the job), `handler` (the tool's outcome →
its result handler's outcome, queue wait included) and `answer` (request → the outcome the client gets, in the log).
"""

import json
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from schemas.events import (
    Event,
    HandlerFailed,
    HandlerStarted,
    HandlerSucceeded,
    ToolCancelRequested,
    ToolFailed,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.events.justification import (
    JustificationExpired,
    JustificationPersisted,
    JustificationRevoked,
    PreflightRequired,
)
from schemas.events.llm import LLMAttempted

BUCKETS_MS: tuple[float, ...] = (
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1000,
    2500,
    5000,
    10000,
    30000,
    60000,
    300000,
)
"""Upper bounds of the latency buckets (a value v falls in the first bucket with v ≤ bound; past the last: +Inf)."""
STAGES = ("queue", "run", "handler", "answer")
SLOT_S = 10
"""Length of one time slot of the per-slot counters."""
KEEP_SLOTS = 360
"""Slots kept behind the newest event (one hour); older slot keys are deleted as the log moves on."""
UNKNOWN_TOOL = "(unknown)"
"""The tool of an outcome whose request is not in the log (trimmed before the summary absorbed it)."""


def field_calls(tool: str, outcome: str) -> str:
    """Calls of `tool` by `outcome`: requested, succeeded, failed, cancel_requested, handler_succeeded, …"""
    return f"calls|{tool}|{outcome}"


def field_bucket(tool: str, stage: str, index: int) -> str:
    return f"hist|{tool}|{stage}|{index}"


def field_sum(tool: str, stage: str) -> str:
    """Sum of the stage's durations in integer microseconds (exact whatever the order of additions)."""
    return f"hsum|{tool}|{stage}"


def field_error(tool: str, code: str) -> str:
    return f"error|{tool}|{code}"


def field_event(kind: str) -> str:
    return f"event|{kind}"


def field_sandbox(code: str) -> str:
    return f"sandbox|{code}"


def field_cache(kind: str) -> str:
    """Justification cache: hit (a justification let a call through), miss (one was required), persisted, …"""
    return f"cache|{kind}"


def field_llm(model: str, kind: str) -> str:
    """Per model: attempts, turns (first attempts), first_ok, retries, provider_retries."""
    return f"llm|{model}|{kind}"


def is_histogram(name: str) -> bool:
    """Histogram fields live in slot keys of their own (`ops_hist_slot`), so counters read cheaply."""
    return name.startswith(("hist|", "hsum|"))


MAX_US = 2**40
"""Largest duration a fold adds (about 12.7 days): millions of them still sum inside Redis' 64-bit HINCRBY."""


def whole_us(ms: float) -> int:
    """A duration from an event as whole microseconds a counter can add: never negative, NaN or past `MAX_US`.

    Events are written by our workers, but the log is read for weeks: one absurd value (a skewed clock, a
    hand-written event) must not make HINCRBY fail and stall a fold behind it.
    """
    if not ms > 0:  # also NaN
        return 0
    return MAX_US if ms >= MAX_US / 1000 else round(ms * 1000)


def bucket_of(ms: float) -> int:
    return bisect_left(BUCKETS_MS, ms) if ms == ms else 0


def slot_of(ts_us: int) -> int:
    return ts_us // (SLOT_S * 1_000_000)


def epoch_us(ts: datetime) -> int:
    return round(ts.timestamp() * 1_000_000)


@dataclass
class Pending:
    """What the fold remembers of a call until its last outcome."""

    tool: str
    requested_us: int
    handled: bool = False
    """The call carries a result handler: its `handler.*` outcome is the answer."""
    worker: str = ""
    attempts: int = 0
    succeeded_us: int = 0
    """When the tool succeeded (a handled call then waits for its handler)."""

    def dumps(self) -> str:
        return json.dumps(
            [self.tool, self.requested_us, self.handled, self.worker, self.attempts, self.succeeded_us],
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, raw: str | bytes) -> "Pending":
        tool, requested_us, handled, worker, attempts, succeeded_us = json.loads(raw)
        return cls(tool, requested_us, handled, worker, attempts, succeeded_us)


@dataclass
class OpsDelta:
    """What one batch of events changes in the summary; written in one transaction with the new cursors."""

    totals: Counter[str] = field(default_factory=Counter)
    slots: defaultdict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    pending: dict[str, Pending | None] = field(default_factory=dict)
    """Call id → its new state, or None once it ended (deleted)."""
    workers: dict[str, int] = field(default_factory=dict)
    traces: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    expired_slots: list[int] = field(default_factory=list)
    cursors: dict[str, str] = field(default_factory=dict)
    events: int = 0
    slot_max: int = 0


class OpsFold:
    """Folds events, in log order, into an `OpsDelta` over the pending calls loaded beforehand."""

    def __init__(self, pending: Mapping[str, Pending], slot_max: int) -> None:
        self._loaded = pending
        self.delta = OpsDelta(slot_max=slot_max)

    def apply(self, stream: str, entry_id: str, event: Event) -> None:
        delta = self.delta
        delta.cursors[stream] = entry_id
        delta.events += 1
        ts_us = epoch_us(event.ts)
        slot = slot_of(ts_us)
        self._advance(slot)
        self._count(slot, field_event(event.type))
        delta.traces[event.trace_id].add(event.aggregate)
        step = _STEPS.get(type(event.data))
        if step is not None:
            step(self, event, slot, ts_us)

    def pending(self, call_id: str) -> Pending | None:
        if call_id in self.delta.pending:
            return self.delta.pending[call_id]
        return self._loaded.get(call_id)

    def _advance(self, slot: int) -> None:
        """Move the slot window to end at `slot`; slots that fall out of it are deleted (decided by events alone)."""
        delta, old = self.delta, self.delta.slot_max
        if slot <= old:
            return
        delta.slot_max = slot
        if old == 0:
            return
        gone = range(old - KEEP_SLOTS + 1, min(slot - KEEP_SLOTS, old) + 1)
        delta.expired_slots += list(gone)
        for stale in [s for s in delta.slots if s <= slot - KEEP_SLOTS]:
            del delta.slots[stale]

    def _count(self, slot: int, name: str, n: int = 1) -> None:
        self.delta.totals[name] += n
        if slot > self.delta.slot_max - KEEP_SLOTS:
            self.delta.slots[slot][name] += n

    def _observe(self, slot: int, tool: str, stage: str, ms: float) -> None:
        self._count(slot, field_bucket(tool, stage, bucket_of(ms)))
        self._count(slot, field_sum(tool, stage), whole_us(ms))

    def _end(self, call_id: str, pending: Pending | None, slot: int, ts_us: int) -> None:
        if pending is not None:
            self._observe(slot, pending.tool, "answer", (ts_us - pending.requested_us) / 1000)
            self.delta.pending[call_id] = None

    def _requested(self, event: Event, slot: int, ts_us: int) -> None:
        data = event.payload(ToolRequested)
        self.delta.pending[data.call_id] = Pending(data.tool, ts_us, handled=data.result_handler is not None)
        self._count(slot, field_calls(data.tool, "requested"))
        if data.justified_by:
            self._count(slot, field_cache("hit"), len(data.justified_by))

    def _started(self, event: Event, slot: int, ts_us: int) -> None:
        data = event.payload(ToolStarted)
        self.delta.workers[data.worker] = ts_us
        pending = self.pending(data.call_id)
        self._observe(slot, pending.tool if pending else UNKNOWN_TOOL, "queue", data.queue_wait_ms)
        if pending is not None:
            pending.worker, pending.attempts = data.worker, pending.attempts + 1
            self.delta.pending[data.call_id] = pending

    def _succeeded(self, event: Event, slot: int, ts_us: int) -> None:
        data = event.payload(ToolSucceeded)
        pending = self.pending(data.call_id)
        tool = pending.tool if pending else UNKNOWN_TOOL
        self._seen(data.worker, ts_us)
        self._count(slot, field_calls(tool, "succeeded"))
        self._observe(slot, tool, "run", data.duration_ms)
        if pending is not None and pending.handled:
            pending.succeeded_us = ts_us
            self.delta.pending[data.call_id] = pending
        else:
            self._end(data.call_id, pending, slot, ts_us)

    def _failed(self, event: Event, slot: int, ts_us: int) -> None:
        data = event.payload(ToolFailed)
        pending = self.pending(data.call_id)
        tool = pending.tool if pending else UNKNOWN_TOOL
        self._seen(data.worker, ts_us)
        self._count(slot, field_calls(tool, "failed"))
        self._count(slot, field_error(tool, data.code))
        if data.worker:  # a worker ran the job (a call cancelled before it started has no run)
            self._observe(slot, tool, "run", data.duration_ms)
        self._end(data.call_id, pending, slot, ts_us)

    def _cancel(self, event: Event, slot: int, ts_us: int) -> None:
        pending = self.pending(event.payload(ToolCancelRequested).call_id)
        self._count(slot, field_calls(pending.tool if pending else UNKNOWN_TOOL, "cancel_requested"))

    def _handler_started(self, event: Event, slot: int, ts_us: int) -> None:
        self._seen(event.payload(HandlerStarted).worker, ts_us)

    def _handler_outcome(self, event: Event, slot: int, ts_us: int) -> None:
        data = event.payload(HandlerSucceeded | HandlerFailed)  # type: ignore[arg-type]
        pending = self.pending(data.call_id)
        tool = pending.tool if pending else UNKNOWN_TOOL
        self._seen(data.worker, ts_us)
        outcome = "handler_succeeded" if isinstance(data, HandlerSucceeded) else "handler_failed"
        self._count(slot, field_calls(tool, outcome))
        if isinstance(data, HandlerFailed):
            self._count(slot, field_error(tool, data.code))
            self._count(slot, field_sandbox(data.code))
        if pending is not None and pending.succeeded_us:
            self._observe(slot, tool, "handler", (ts_us - pending.succeeded_us) / 1000)
        self._end(data.call_id, pending, slot, ts_us)

    def _seen(self, worker: str, ts_us: int) -> None:
        if worker:
            self.delta.workers[worker] = ts_us

    def _preflight(self, event: Event, slot: int, ts_us: int) -> None:
        self._count(slot, field_cache("miss"))

    def _expired(self, event: Event, slot: int, ts_us: int) -> None:
        self._count(slot, field_cache("expired"))

    def _revoked(self, event: Event, slot: int, ts_us: int) -> None:
        self._count(slot, field_cache("revoked"))

    def _persisted(self, event: Event, slot: int, ts_us: int) -> None:
        self._count(slot, field_cache(f"persisted_{event.payload(JustificationPersisted).source}"))

    def _llm_attempt(self, event: Event, slot: int, ts_us: int) -> None:
        data = event.payload(LLMAttempted)
        self._count(slot, field_llm(data.model, "attempts"))
        if data.attempt == 1:
            self._count(slot, field_llm(data.model, "turns"))
            if data.outcome in ("calls", "answer"):
                self._count(slot, field_llm(data.model, "first_ok"))
        else:
            self._count(slot, field_llm(data.model, "retries"))
        if data.provider_retries:
            self._count(slot, field_llm(data.model, "provider_retries"), data.provider_retries)


Step = Callable[[OpsFold, Event, int, int], None]

_STEPS: dict[type, Step] = {
    ToolRequested: OpsFold._requested,
    ToolStarted: OpsFold._started,
    ToolSucceeded: OpsFold._succeeded,
    ToolFailed: OpsFold._failed,
    ToolCancelRequested: OpsFold._cancel,
    HandlerStarted: OpsFold._handler_started,
    HandlerSucceeded: OpsFold._handler_outcome,
    HandlerFailed: OpsFold._handler_outcome,
    LLMAttempted: OpsFold._llm_attempt,
    JustificationPersisted: OpsFold._persisted,
    PreflightRequired: OpsFold._preflight,
    JustificationExpired: OpsFold._expired,
    JustificationRevoked: OpsFold._revoked,
}
"""Event payload type → its step; every other event is only counted by type (and joins its trace)."""
