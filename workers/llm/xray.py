"""The X-ray of one conversation: tools run, a timeline, total time, and citations taken from tool results."""

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pydantic import JsonValue

from schemas.chat import Citation, TimelineEntry, XRay, XRayTool

CITATION_KEYS = frozenset(
    {"source", "sources", "uri", "url", "href", "path", "file", "dataset", "citation", "citations"}
)
"""Result fields that name where the data came from."""
MAX_CITATIONS = 20


def citations_from(tool: str, result: JsonValue, *, depth: int = 4) -> list[Citation]:
    """Sources named in a tool's structured RESULT (never its arguments), in order, without duplicates."""
    seen = dict.fromkeys(_sources(result, depth))
    return [Citation(tool=tool, source=s) for s in list(seen)[:MAX_CITATIONS]]


def _sources(value: JsonValue, depth: int) -> Iterator[str]:
    if depth < 0:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key.lower() in CITATION_KEYS:
                yield from _strings(item)
            elif isinstance(item, dict | list):
                yield from _sources(item, depth - 1)
    elif isinstance(value, list):
        for item in value:
            yield from _sources(item, depth - 1)


def _strings(value: JsonValue) -> Iterator[str]:
    if isinstance(value, str) and value:
        yield value
    elif isinstance(value, list):
        yield from (v for v in value if isinstance(v, str) and v)


def preview(result: JsonValue, text: str, limit: int) -> str:
    """The first `limit` characters of the tool's text, or of its JSON result when it has no text."""
    shown = text or json.dumps(result, separators=(",", ":"), default=str)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


@dataclass
class XRayRecorder:
    """Collects the X-ray while the loop runs; times are milliseconds since the conversation started."""

    clock: Callable[[], float] = time.perf_counter
    started: float = field(default=0.0)
    tools: list[XRayTool] = field(default_factory=list)
    timeline: list[TimelineEntry] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def elapsed_ms(self) -> float:
        """Milliseconds since the conversation started."""
        return round((self.clock() - self.started) * 1000, 3)

    def mark(self, event: str) -> None:
        """Add a timeline entry now."""
        self.timeline.append(TimelineEntry(t_ms=self.elapsed_ms(), event=event))

    def tool(self, record: XRayTool, result: JsonValue) -> None:
        """Add a finished tool call and the citations its result names."""
        self.tools.append(record)
        if not record.is_error:
            known = {c.source for c in self.citations}
            self.citations += [c for c in citations_from(record.name, result) if c.source not in known]

    def build(self) -> XRay:
        """The X-ray so far."""
        return XRay(
            tools=list(self.tools),
            timeline=list(self.timeline),
            total_ms=self.elapsed_ms(),
            citations=self.citations[:MAX_CITATIONS],
        )
