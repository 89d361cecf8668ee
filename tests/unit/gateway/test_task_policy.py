"""Which calls become tasks: only for clients that declared the extension, long tools at once, others past a wait."""

import pytest

from gateway.tasks.policy import SLOT, TaskSlot, became_task, synchronous, wait_before_task


def test_without_a_declaring_client_no_call_becomes_a_task() -> None:
    assert wait_before_task("raster_reproject", 10.0) is None


def test_long_tools_become_tasks_at_once_and_others_after_the_threshold() -> None:
    slot = TaskSlot()
    token = SLOT.set(slot)
    try:
        assert wait_before_task("raster_reproject", 10.0) == 0.0
        assert wait_before_task("ping", 10.0) == 10.0
        with synchronous():  # the gateway's own nested calls
            assert wait_before_task("raster_reproject", 10.0) is None
        became_task("call-1")
        assert slot.call_id == "call-1"
    finally:
        SLOT.reset(token)


def test_reporting_a_task_outside_a_task_capable_call_is_a_programming_error() -> None:
    with pytest.raises(AssertionError):
        became_task("call-1")


def test_a_task_only_tool_that_asked_first_becomes_a_task_when_its_answers_come_back() -> None:
    """tasks-mrtr-composition: the MRTR round stays synchronous, the retry that resumes the call gets a task."""
    token = SLOT.set(TaskSlot())
    try:
        assert wait_before_task("test_tool_with_task", 10.0) == 10.0
        assert wait_before_task("test_tool_with_task", 10.0, resumed=True) == 0.0
        assert wait_before_task("ping", 10.0, resumed=True) == 10.0
    finally:
        SLOT.reset(token)
