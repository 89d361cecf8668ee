"""`python -m gateway.ops.tail`: the log for people (coloured lines) and for scripts (one JSON object a line), what
`geogate events tail` runs; its lines are the ones `/ops` shows (`gateway.ops.describe`)."""

import argparse
import contextlib
import fnmatch
import json
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from gateway.ops.describe import describe, worker_of
from gateway.ops.render import fmt_ms
from geogate.calls.store import EventStore
from geogate.eventlog.keys import all_categories
from geogate.eventlog.replay import iter_log
from geogate.eventlog.store import StoredEvent, parse_entries
from geogate.settings import SettingsError, process_settings
from schemas.events import (
    Event,
    HandlerFailed,
    HandlerSucceeded,
    ToolFailed,
    ToolProgress,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)

COLOURS = {"requested": "cyan", "started": "blue", "progress": "dim", "succeeded": "green", "failed": "red"}


def select(events: Iterator[StoredEvent], pattern: str | None) -> Iterator[StoredEvent]:
    return (e for e in events if pattern is None or fnmatch.fnmatchcase(e.event.type, pattern))


def as_json(stored: StoredEvent) -> str:
    return json.dumps({"stream": stored.stream, "entry_id": stored.entry_id, **stored.event.model_dump(mode="json")})


class Stages:
    """What a tail has seen of each call, so that its end can be printed with the call's stage durations."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self.requested: dict[str, datetime] = {}
        self.queue: dict[str, float] = {}
        self.succeeded: dict[str, datetime] = {}
        self.handled: dict[str, bool] = {}
        """Calls with a result handler: their answer is the handler's outcome."""

    def note(self, event: Event) -> str:
        """The stage durations `event` completes (`queue 2.1 ms · run 10.0 ms · answer 12.3 ms`), or ""."""
        data, call = event.data, getattr(event.data, "call_id", "")
        if isinstance(data, ToolRequested):
            self._remember(self.requested, call, event.ts)
            if data.result_handler:
                self._remember(self.handled, call, True)
        elif isinstance(data, ToolStarted):
            self._remember(self.queue, call, data.queue_wait_ms)
        elif isinstance(data, ToolSucceeded | ToolFailed):
            parts = [("queue", self.queue.pop(call, None)), ("run", data.duration_ms)]
            if isinstance(data, ToolSucceeded) and self.handled.pop(call, False):
                self._remember(self.succeeded, call, event.ts)
                return _stages(parts)
            return _stages([*parts, ("answer", _since(self.requested.pop(call, None), event.ts))])
        elif isinstance(data, HandlerSucceeded | HandlerFailed):
            handler = _since(self.succeeded.pop(call, None), event.ts)
            return _stages([("handler", handler), ("answer", _since(self.requested.pop(call, None), event.ts))])
        return ""

    def _remember(self, table: dict[str, Any], key: str, value: Any) -> None:
        table[key] = value
        if len(table) > self.LIMIT:
            del table[next(iter(table))]


def _since(start: datetime | None, end: datetime) -> float | None:
    return None if start is None else (end - start).total_seconds() * 1000


def _stages(parts: list[tuple[str, float | None]]) -> str:
    return " · ".join(f"{name} {fmt_ms(ms)}" for name, ms in parts if ms is not None)


def progress_bar(data: ToolProgress, width: int = 16) -> str:
    if not data.total:
        return f"{data.progress:g} {data.message or ''}".strip()
    share = max(0.0, min(1.0, data.progress / data.total))
    filled = round(share * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {share:4.0%} {data.message or ''}".rstrip()


def as_text(stored: StoredEvent, stages: Stages | None = None) -> Text:
    event = stored.event
    verb = event.type.rsplit(".", 1)[-1]
    line = Text(f"{event.ts:%H:%M:%S.%f}"[:-3] + " ", style="dim")
    line.append(f"{event.type:<26}", style=COLOURS.get(verb, "magenta"))
    line.append(f" {event.aggregate} ", style="bold")
    if worker := worker_of(event):
        line.append(f"{worker} ", style="dim")
    line.append(progress_bar(event.data) if isinstance(event.data, ToolProgress) else describe(event))
    if stages is not None and (timing := stages.note(event)):
        line.append(f"  ({timing})", style="cyan")
    return line


def last_events(store: EventStore, count: int) -> list[StoredEvent]:
    """The newest `count` events across every stream, oldest first."""
    newest: list[StoredEvent] = []
    for category in all_categories():
        stream = store.keys.stream(category)
        newest += parse_entries(stream, store.redis.xrevrange(stream, count=count)[::-1])
    newest.sort(key=lambda s: tuple(int(p) for p in s.entry_id.split("-")))
    return newest[-count:]


def follow(store: EventStore, block_ms: int = 1000, reads: int | None = None) -> Iterator[StoredEvent]:
    """New events from now on (from this call, not from the first `next`), across every stream.

    `reads` bounds the number of blocking reads (None: follow until interrupted).
    """
    # Concrete ids, not "$": "$" means "newer than now" on every read, which would drop what one stream gets
    # while another stream's batch is being printed.
    cursors = {store.keys.stream(c): _newest(store, store.keys.stream(c)) for c in all_categories()}
    return _follow(store, cursors, block_ms, reads)


def _follow(store: EventStore, cursors: dict[str, str], block_ms: int, reads: int | None) -> Iterator[StoredEvent]:
    count = 0
    while reads is None or count < reads:
        count += 1
        for stream, entries in store.redis.xread(cursors, block=block_ms, count=500) or []:
            name = stream.decode()
            cursors[name] = entries[-1][0].decode()
            yield from parse_entries(name, entries)


def _newest(store: EventStore, stream: str) -> str:
    newest = store.redis.xrevrange(stream, count=1)
    return newest[0][0].decode() if newest else "0-0"


def run_tail(store: EventStore, pattern: str | None, count: int, do_follow: bool, json_lines: bool) -> None:
    console, stages = Console(highlight=False), Stages()
    emit = (lambda s: print(as_json(s), flush=True)) if json_lines else (lambda s: console.print(as_text(s, stages)))
    start = iter(last_events(store, count)) if count > 0 else iter_log(store)
    for stored in select(start, pattern):
        emit(stored)
    if do_follow:
        for stored in select(follow(store), pattern):
            emit(stored)


def main(argv: list[str] | None = None) -> None:
    """Tail the log of the Redis the settings name (`geogate events tail` resolves it and passes it on)."""
    parser = argparse.ArgumentParser(prog="geogate events tail", description="Print recent events.")
    parser.add_argument("--type", dest="type_", default=None, help="glob on the event type, e.g. 'tool.*'")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    parser.add_argument("--json", dest="json_lines", action="store_true", help="one JSON object a line")
    parser.add_argument("--count", "-n", type=int, default=20, help="how many recent events first (0: the whole log)")
    ns = parser.parse_args(argv)
    try:
        store = EventStore.from_settings(process_settings())
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None
    with contextlib.suppress(KeyboardInterrupt):
        run_tail(store, ns.type_, ns.count, ns.follow, ns.json_lines)


if __name__ == "__main__":
    main(sys.argv[1:])
