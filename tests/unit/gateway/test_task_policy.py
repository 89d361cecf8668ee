"""Which calls become tasks: only for clients that declared the extension, long tools at once, others past a wait."""

from dataclasses import replace

import pytest

from gateway.tasks.policy import SLOT, TaskSlot, became_task, synchronous, wait_before_task
from schemas.tools import TOOLS

REPROJECT, PING = TOOLS["raster_reproject"], TOOLS["ping"]


def test_without_a_declaring_client_no_call_becomes_a_task() -> None:
    assert wait_before_task(REPROJECT, 10.0) is None


def test_long_tools_become_tasks_at_once_and_others_after_the_threshold() -> None:
    slot = TaskSlot()
    token = SLOT.set(slot)
    try:
        assert wait_before_task(REPROJECT, 10.0) == 0.0
        assert wait_before_task(PING, 10.0) == 10.0
        with synchronous():  # the gateway's own nested calls
            assert wait_before_task(REPROJECT, 10.0) is None
        became_task("call-1")
        assert slot.call_id == "call-1"
    finally:
        SLOT.reset(token)


def test_the_published_tools_that_run_long_are_the_gdal_writers_stats_and_ask() -> None:
    """The list the policy kept by name before `ToolSpec.runs_long` said it on each spec, and the analysis tools
    that write layers or read whole rasters."""
    assert {name for name, spec in TOOLS.items() if spec.runs_long} == {
        "raster_reproject",
        "raster_convert",
        "raster_stats",
        "raster_calc",
        "raster_terrain",
        "raster_clip",
        "raster_mosaic",
        "vector_reproject",
        "vector_convert",
        "vector_clip",
        "vector_buffer",
        "vector_simplify",
        "vector_geometry",
        "vector_measure",
        "zonal_stats",
        "raster_polygonize",
        "vector_rasterize",
        "raster_contours",
        "vector_sql",
        "stac_composite",
        "stac_zonal_series",
        "vector_calculate",
        "vector_overlay",
        "vector_dissolve",
        "vector_join",
        "ask",
        "plan_run",
    }
    assert not [name for name, spec in TOOLS.items() if spec.task_only]


def test_reporting_a_task_outside_a_task_capable_call_is_a_programming_error() -> None:
    with pytest.raises(AssertionError):
        became_task("call-1")


def test_a_task_only_tool_that_asked_first_becomes_a_task_when_its_answers_come_back() -> None:
    """tasks-mrtr-composition: the MRTR round stays synchronous, the retry that resumes the call gets a task."""
    task_only = replace(PING, name="asks_then_works", task_only=True)
    token = SLOT.set(TaskSlot())
    try:
        assert wait_before_task(task_only, 10.0) == 10.0
        assert wait_before_task(task_only, 10.0, resumed=True) == 0.0
        assert wait_before_task(PING, 10.0, resumed=True) == 10.0
    finally:
        SLOT.reset(token)
