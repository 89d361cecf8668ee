"""What a job sees of the world: its call, the workspace roots, the store, and a progress reporter that cancels."""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from geogate.settings import Settings
from schemas.events import FileDigest
from workers.jobkit.errors import JobCancelled, JobSuperseded

if TYPE_CHECKING:
    from geogate.calls.store import EventStore

_DEFAULTS = Settings.defaults()
"""Field defaults only (no environment read): for contexts built without settings, as in unit tests."""

ProgressSink = Callable[[float, float | None, str | None], bool]
"""Appends `tool.progress`; returns True when the call has been cancelled."""


@dataclass(frozen=True)
class Fence:
    """Which attempt a job is, and whether it is still the call's current one (checked before committing output)."""

    call_id: str
    attempt: str
    current: Callable[[], bool]

    def check(self) -> None:
        """Raises: JobSuperseded: a re-dispatch made another attempt the current one."""
        if not self.current():
            raise JobSuperseded(self.call_id, self.attempt)


def _never_cancelled(progress: float, total: float | None, message: str | None) -> bool:
    return False


@dataclass
class JobContext:
    """Passed to every job. Jobs call `progress()` between blocks of work; it raises if the call was cancelled."""

    call_id: str
    roots: list[Path]
    sink: ProgressSink = _never_cancelled
    worker: str = ""
    """`hostname:pid` of this process."""
    queue: str = ""
    queue_wait_ms: float = 0.0
    actor: str = "system"
    trace_id: str = ""
    store: "EventStore | None" = None
    settings: Settings | None = None
    fence: Fence | None = None
    """Set by the runner: outputs are renamed into place only while this attempt is current."""
    lease: str = ""
    """The liveness lease of this worker node."""
    client_capabilities: frozenset[str] = frozenset()
    """What the calling client declared it can answer (`tool.requested`): what `workers.jobkit.inputs.ask_client`
    may ask."""
    inputs: list[FileDigest] = field(default_factory=list)
    """The files the job read, with their digests when it opened them: set by `workers.jobs` when the job returns."""
    extra: dict[str, object] = field(default_factory=dict)

    def ttl_for(self, domain: str) -> float:
        """A justification domain's time to live under this worker's settings (the defaults when it has none)."""
        return (self.settings or _DEFAULTS).justification_ttl(domain)

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress and stop here if the call was cancelled.

        Raises:
            JobCancelled: a `tool.cancel_requested` event exists for this call.
            JobSuperseded: this attempt lost its lease and the call was re-dispatched.
        """
        if self.sink(progress, total, message):
            raise JobCancelled()
