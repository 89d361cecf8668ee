"""A task's status is derived from its call's events (SEP-2663 statuses)."""

import pytest

from geogate.calls.projections.call_state import CallState
from geogate.calls.projections.tasks import task_status, task_view


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        ("requested", "", "working"),
        ("running", "", "working"),
        ("succeeded", "", "completed"),
        ("failed", "gdal.open", "completed"),  # the tool's own error: completed with isError
        ("failed", "job.crashed", "failed"),  # no answer at all: a JSON-RPC error
        ("failed", "call.attempts_exhausted", "failed"),
        ("failed", "cancelled", "cancelled"),
    ],
)
def test_task_status_follows_the_call(status: str, code: str, expected: str) -> None:
    assert task_status(CallState(call_id="c", status=status, tool="ping", error_code=code)) == expected


def test_a_task_is_updated_when_its_call_starts_and_ends() -> None:
    state = CallState(call_id="c", status="running", tool="ping", requested_at="2026-01-01T00:00:00+00:00", cancel=True)
    view = task_view(state, {b"started_at": b"2026-01-01T00:00:01+00:00"})
    assert view.last_updated_at == "2026-01-01T00:00:01+00:00" and view.status_message == "cancel requested"
    assert view.expired(ttl_s=60) and not view.expired(ttl_s=10**10)


def test_a_working_task_says_its_calls_last_progress_a_tiled_calls_tiles_done() -> None:
    """Issue 29: `tasks/get` on a tiled call shows how many of its tiles are done."""
    state = CallState(call_id="c", status="running", tool="raster_reproject")

    assert task_view(state, {b"message": b"7/20 tiles done"}).status_message == "7/20 tiles done"
    assert task_view(state, {}).status_message == "running"
