"""Which calls become tasks, and the per-request slot through which `Gateway.call` reports that one did."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from schemas.tools.base import ToolSpec

TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
"""The first protocol revision with the extension; legacy (handshake-era) clients always get synchronous results."""


@dataclass
class TaskSlot:
    """Set for a `tools/call` whose client declared the extension; `call_id` is filled when the call became a task."""

    call_id: str | None = None


SLOT: ContextVar[TaskSlot | None] = ContextVar("geogate_task_slot", default=None)


def wait_before_task(spec: ToolSpec, after_s: float, resumed: bool = False) -> float | None:
    """How long the current call may wait for its outcome before it becomes a task; None: never a task.

    A tool that runs long (`ToolSpec.runs_long`) becomes a task at once. A tool that runs only as a task
    (`ToolSpec.task_only`) but first asks the client synchronously (MRTR) becomes one as soon as its answers are in:
    on the retry that resumes it (`resumed`).
    """
    if SLOT.get() is None:
        return None
    return 0.0 if spec.runs_long or (resumed and spec.task_only) else after_s


@contextmanager
def synchronous() -> Iterator[None]:
    """The gateway's own calls inside a tool call (a server-side justification) wait for their outcome: never tasks."""
    token = SLOT.set(None)
    try:
        yield
    finally:
        SLOT.reset(token)


def became_task(call_id: str) -> None:
    slot = SLOT.get()
    assert slot is not None, "became_task outside a task-capable call"
    slot.call_id = call_id
