"""What the calls stream says about every call: requested once, started, at most one outcome; for tests and drivers.

`audit(store)` reads the whole calls stream (no projection), so it checks the log itself, not a read model.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from geogate.calls import keys
from geogate.calls.store import EventStore
from schemas.events import ToolRequested

OUTCOMES = ("tool.succeeded", "tool.failed")


@dataclass
class Audit:
    """Calls by tool, and every call that breaks a rule of the log (with the types of its events)."""

    calls: Counter[str] = field(default_factory=Counter)
    finished: Counter[str] = field(default_factory=Counter)
    waiting: list[str] = field(default_factory=list)
    """Calls with no outcome yet whose job waits for an answer the client has not given."""
    broken: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def _types_by_call(store: EventStore) -> dict[str, list[str]]:
    by_call: dict[str, list[str]] = defaultdict(list)
    tools: dict[str, str] = {}
    for stored in store.read(keys.CALLS):
        event = stored.event
        if not event.aggregate.startswith("call:"):
            continue
        by_call[event.aggregate].append(event.type)
        if isinstance(event.data, ToolRequested):
            tools[event.aggregate] = event.data.tool
    return {f"{tools.get(aggregate, '?')} {aggregate}": types for aggregate, types in by_call.items()}


def _waits_for_input(types: list[str]) -> bool:
    return "tool.input_requested" in types and not any(t in OUTCOMES for t in types)


def breaks_the_rules(types: list[str]) -> bool:
    """Requested once and first; at most one outcome, after a start (or a cancel before any); else waiting for input."""
    outcomes = sum(types.count(t) for t in OUTCOMES)
    if types[0] != "tool.requested" or types.count("tool.requested") != 1 or outcomes > 1:
        return True
    if outcomes == 1:
        return "tool.started" not in types and "tool.cancel_requested" not in types
    return not _waits_for_input(types)


def audit(store: EventStore) -> Audit:
    """One pass over the calls stream, every call checked by `breaks_the_rules`."""
    report = Audit()
    for call, types in _types_by_call(store).items():
        tool = call.split(" ", 1)[0]
        report.calls[tool] += 1
        report.finished[tool] += sum(types.count(t) for t in OUTCOMES)
        if breaks_the_rules(types):
            report.broken[call] = types
        elif _waits_for_input(types):
            report.waiting.append(call)
    return report
