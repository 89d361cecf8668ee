"""`geogate replay`'s report of its way, on standard error (standard output keeps the result for scripts).

A replay of a large log runs for minutes (`docs/replay.md`: thousands of events a second on a 2-core machine), so it
says where it is: on a terminal, a live bar per phase with its rate and the time left; elsewhere (a log file, CI,
a pipe), a plain line at most every `EVERY_S` seconds and one when a phase ends.
"""

import sys
import time
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

EVERY_S = 10.0
"""Seconds between two plain lines of the same phase (the phase's end is always written)."""
UNITS = {"rebuild": "events", "compare": "key pairs", "swap": "keys"}


class ReplayProgress:
    """A `geogate.eventlog.replay.Progress` that draws (`live`) or writes lines to `stream`."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TimeRemainingColumn(),
            console=Console(file=self.stream),
            disable=not self.live,
        )
        self.tasks: dict[str, TaskID] = {}
        self.heard = time.monotonic()
        """When the last report came (a phase's clock starts there: the work before its first report counts)."""
        self.began: dict[str, float] = {}
        self.written: dict[str, tuple[float, int]] = {}
        """Per phase: when its last plain line was written, and at what count."""

    def __enter__(self) -> "ReplayProgress":
        self.bar.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.bar.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        self.began.setdefault(phase, self.heard)
        self.heard = now
        if self.live:
            if phase not in self.tasks:
                self.tasks[phase] = self.bar.add_task(phase, total=total, unit=UNITS.get(phase, ""))
            self.bar.update(self.tasks[phase], completed=done, total=total)
            return
        last_at, last_done = self.written.get(phase, (self.began[phase], -1))
        if done == last_done or (done < total and now - last_at < EVERY_S):
            return
        self.written[phase] = (now, done)
        elapsed = now - self.began[phase]
        rate = f", {done / elapsed:,.0f}/s" if elapsed >= 1 else ""  # a phase over at once has no rate to speak of
        share = f" ({done / total:.0%}{rate})" if total else ""
        print(f"replay: {phase} {done:,} of {total:,} {UNITS.get(phase, '')}{share}", file=self.stream, flush=True)
