"""The one lifecycle of a run on a worker: start it (fenced), do the work, end it (fenced), idempotently.

A run is a tool call's job (`tool.started` → `tool.succeeded|failed`) or a call's result handler (`handler.started`
→ `handler.succeeded|failed`): both are a projection hash holding `status`, `attempt` and `attempts`, a start that
may be refused, an outcome that counts only while its attempt is current, and a bounded number of attempts.
"""

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect, Op, Readback
from geogate.settings import Settings
from schemas.events import Event, OutputRef


@dataclass(frozen=True)
class Run:
    """What starts and ends on the log, and how."""

    state: str
    """The projection hash of the run (`status`, `attempt`, `attempts`)."""
    started: Event
    started_key: str
    outcome_key: str
    attempt: str
    may_start: Sequence[Expect]
    """Expectations of the start; the last one bounds the attempts."""
    exhausted: Callable[[], Event]
    """The outcome appended when the start is refused by the attempts bound."""
    exhausted_expect: Sequence[Expect] = ()
    readback: Readback | None = None


@dataclass(frozen=True)
class Begun:
    """A run whose start landed; `readback` is what the start read back (the call's `cancel` flag, for a job)."""

    run: Run
    readback: str | None = None
    effects: list[Op] = field(default_factory=list)


def begin(store: EventStore, run: Run) -> Begun | None:
    """Append the start unless the run ended, is stale or used its attempts (then its outcome says so); None if
    it may not start."""
    result = store.append(run.started, run.started_key, expect=list(run.may_start), readback=run.readback)
    if not result.refused:
        return Begun(run, result.readback)
    if result.failed == len(run.may_start):  # the attempts bound: every earlier start lost its worker
        store.append(run.exhausted(), run.outcome_key, expect=list(run.exhausted_expect))
    return None


def end(store: EventStore, run: Run, outcome: Event, effects: Sequence[Op] = ()) -> bool:
    """Append the outcome (with `effects`, atomically) while this attempt is current; False when superseded."""
    current = Expect(run.state, "attempt", "in", (run.attempt,))
    return not store.append(outcome, run.outcome_key, effects=list(effects), expect=[current]).refused


@dataclass(frozen=True)
class Stored:
    """A run's JSON result: inline when small, else in a blob (`ref`); `size` is its encoded length."""

    value: Any
    ref: OutputRef | None
    size: int


def store_result(store: EventStore, settings: Settings, value: Any, *, keep: bool = False) -> Stored:
    """Keep `value` inline up to `GEOGATE_INLINE_RESULT_MAX_BYTES`, else (or when `keep`) as a blob."""
    encoded = compact(value)
    if len(encoded) <= settings.inline_result_max_bytes and not keep:
        return Stored(value, None, len(encoded))
    return Stored(None, store.put_blob(encoded, settings.blob_ttl_s), len(encoded))


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def ms_since(ts: datetime) -> float:
    return max(0.0, (datetime.now(UTC) - ts).total_seconds() * 1000)


def elapsed_ms(began: float) -> float:
    return round((time.perf_counter() - began) * 1000, 3)
