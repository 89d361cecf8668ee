"""Which calls become tasks, and the per-request slot through which `Gateway.call` reports that one did."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
"""The first protocol revision with the extension; legacy (handshake-era) clients always get synchronous results."""

LONG_TOOLS = frozenset(
    {
        "raster_reproject",
        "raster_convert",
        "raster_stats",
        "vector_reproject",
        "vector_convert",
        "vector_clip",
        "vector_buffer",
        "vector_simplify",
        "ask",
        "slow_compute",
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
    }
)
"""Tools that can run long: a client that declared tasks gets a task handle at once."""

REQUIRED_TOOLS = frozenset({"failing_job", "test_tool_with_task", "confirm_delete", "multi_input"})
"""Tools that run only as tasks: a client that did not declare the extension gets `-32021`."""


@dataclass
class TaskSlot:
    """Set for a `tools/call` whose client declared the extension; `call_id` is filled when the call became a task."""

    call_id: str | None = None


SLOT: ContextVar[TaskSlot | None] = ContextVar("geogate_task_slot", default=None)


def wait_before_task(tool: str, after_s: float, resumed: bool = False) -> float | None:
    """How long the current call may wait for its outcome before it becomes a task; None: never a task.

    A tool that runs only as a task but first asks the client synchronously (MRTR) becomes one as soon as its
    answers are in: on the retry that resumes it (`resumed`).
    """
    if SLOT.get() is None:
        return None
    return 0.0 if tool in LONG_TOOLS or (resumed and tool in REQUIRED_TOOLS) else after_s


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
