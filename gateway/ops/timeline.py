"""A call's history as people read it: its trace's events in order with offsets, its attempts and stage durations."""

from pydantic import BaseModel, Field

from gateway.ops.describe import attempt_of, describe, worker_of
from geogate.eventlog.store import StoredEvent
from schemas.events import Event, HandlerFailed, HandlerSucceeded, ToolFailed, ToolStarted, ToolSucceeded
from schemas.ids import aggregate_id


class Row(BaseModel):
    """One event of a timeline."""

    entry_id: str
    ts: str
    offset_ms: float
    """Milliseconds since the first event shown."""
    type: str
    aggregate: str
    actor: str
    worker: str
    attempt: str
    text: str
    own: bool
    """The event belongs to the call (or workflow) the page is about, not to another aggregate of its trace."""

    @property
    def kind(self) -> str:
        return self.aggregate.split(":", 1)[0]

    @property
    def subject(self) -> str:
        return aggregate_id(self.aggregate) if ":" in self.aggregate else self.aggregate


class Attempt(BaseModel):
    attempt: str
    worker: str
    queue_wait_ms: float
    started_at: str


class Timeline(BaseModel):
    rows: list[Row] = Field(default_factory=list)
    stages: dict[str, float] = Field(default_factory=dict)
    """Stage → milliseconds: queue (last attempt), run, handler, answer; only the stages the call went through."""
    attempts: list[Attempt] = Field(default_factory=list)


def _sort_key(stored: StoredEvent) -> tuple[int, int]:
    ms, seq = stored.entry_id.split("-")
    return int(ms), int(seq)


def rows(events: list[StoredEvent], own: str) -> list[Row]:
    """Events in log order (entry id across streams), each with its offset from the first."""
    ordered = sorted(events, key=_sort_key)
    if not ordered:
        return []
    first = ordered[0].event.ts
    return [
        Row(
            entry_id=s.entry_id,
            ts=s.event.ts.isoformat(),
            offset_ms=(s.event.ts - first).total_seconds() * 1000,
            type=s.event.type,
            aggregate=s.event.aggregate,
            actor=s.event.actor,
            worker=worker_of(s.event),
            attempt=attempt_of(s.event),
            text=describe(s.event),
            own=s.event.aggregate == own,
        )
        for s in ordered
    ]


def _ms_between(later: Event, earlier: Event) -> float:
    return (later.ts - earlier.ts).total_seconds() * 1000


def stages(events: list[Event]) -> dict[str, float]:
    """Stage durations of one call from its own events (in append order)."""
    found: dict[str, float] = {}
    requested = next((e for e in events if e.type == "tool.requested"), None)
    succeeded: Event | None = None
    final: Event | None = None
    for event in events:
        data = event.data
        if isinstance(data, ToolStarted):
            found["queue"] = data.queue_wait_ms
        elif isinstance(data, ToolSucceeded | ToolFailed):
            found["run"] = data.duration_ms
            succeeded, final = (event if isinstance(data, ToolSucceeded) else None), event
        elif isinstance(data, HandlerSucceeded | HandlerFailed):
            if succeeded is not None:
                found["handler"] = _ms_between(event, succeeded)
            final = event
    if requested is not None and final is not None:
        found["answer"] = _ms_between(final, requested)
    return found


def attempts(events: list[Event]) -> list[Attempt]:
    return [
        Attempt(attempt=d.attempt, worker=d.worker, queue_wait_ms=d.queue_wait_ms, started_at=e.ts.isoformat())
        for e in events
        if isinstance(d := e.data, ToolStarted)
    ]


def timeline(trace_events: list[StoredEvent], own: str) -> Timeline:
    """The page's timeline: every event of the trace, and the stages and attempts of the aggregate `own`."""
    mine = [s.event for s in sorted(trace_events, key=_sort_key) if s.event.aggregate == own]
    return Timeline(rows=rows(trace_events, own), stages=stages(mine), attempts=attempts(mine))
