"""`geogate events tail`: the log for people (coloured lines) and for scripts (one JSON object a line)."""

import fnmatch
import json
from collections.abc import Iterator

from rich.console import Console
from rich.text import Text

from eventlog.replay import iter_log
from eventlog.store import EventStore, StoredEvent, parse_entries
from eventlog.streams import all_categories

COLOURS = {"requested": "cyan", "started": "blue", "progress": "dim", "succeeded": "green", "failed": "red"}


def select(events: Iterator[StoredEvent], pattern: str | None) -> Iterator[StoredEvent]:
    return (e for e in events if pattern is None or fnmatch.fnmatchcase(e.event.type, pattern))


def as_json(stored: StoredEvent) -> str:
    return json.dumps({"stream": stored.stream, "entry_id": stored.entry_id, **stored.event.model_dump(mode="json")})


def as_text(stored: StoredEvent) -> Text:
    event = stored.event
    verb = event.type.rsplit(".", 1)[-1]
    line = Text(f"{event.ts:%H:%M:%S.%f}"[:-3] + " ", style="dim")
    line.append(f"{event.type:<26}", style=COLOURS.get(verb, "magenta"))
    line.append(f" {event.aggregate} ", style="bold")
    line.append(_detail(stored))
    return line


def _detail(stored: StoredEvent) -> str:
    data = stored.event.data.model_dump(mode="json", exclude={"type", "call_id"})
    shown = {k: v for k, v in data.items() if v not in (None, "", [], {})}
    text = json.dumps(shown, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


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
    console = Console(highlight=False)
    emit = (lambda s: print(as_json(s), flush=True)) if json_lines else (lambda s: console.print(as_text(s)))
    start = iter(last_events(store, count)) if count > 0 else iter_log(store)
    for stored in select(start, pattern):
        emit(stored)
    if do_follow:
        for stored in select(follow(store), pattern):
            emit(stored)
