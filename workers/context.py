"""What a job sees of the world: its call id, the workspace roots, and a progress reporter that also cancels."""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workers.errors import JobCancelled

ProgressSink = Callable[[float, float | None, str | None], bool]
"""Appends `tool.progress`; returns True when the call has been cancelled."""


@dataclass
class JobContext:
    """Passed to every job. Jobs call `progress()` between blocks of work; it raises if the call was cancelled."""

    call_id: str
    roots: list[Path]
    sink: ProgressSink = field(default=lambda progress, total, message: False)

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress and stop here if the call was cancelled.

        Raises:
            JobCancelled: a `tool.cancel_requested` event exists for this call.
        """
        if self.sink(progress, total, message):
            raise JobCancelled()
