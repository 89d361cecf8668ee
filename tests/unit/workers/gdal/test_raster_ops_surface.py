"""Band math, terrain, clip and mosaic as a surface: published with a job, honest hints, long-running as tasks,
tiled where per-pixel, and the gateway refusing a bad expression with a field error before anything is queued."""

import pytest

from schemas.tools import INTERNAL, TOOLS
from schemas.validation import ArgumentsInvalid, validate
from workers.tiling.declare import TILERS
from workers.tools import load_all

NEW = ("raster_calc", "raster_terrain", "raster_clip", "raster_mosaic")


@pytest.mark.parametrize("name", NEW)
def test_each_tool_is_published_with_a_job_and_writer_hints(name: str) -> None:
    spec, jobs = TOOLS[name], load_all()

    assert name in jobs
    assert spec.hints.destructive and not spec.hints.read_only
    assert "overwrite" in spec.args.model_fields and "output" in spec.args.model_fields
    assert "Use it" in spec.description
    assert spec.runs_long


@pytest.mark.parametrize("name", ["raster_calc", "raster_terrain", "raster_mosaic"])
def test_the_per_pixel_tools_run_by_tiles_through_the_existing_fan_out(name: str) -> None:
    load_all()

    assert TOOLS[name].tiled and name in TILERS and f"{name}.tile" in INTERNAL


def test_the_gateways_validation_names_the_expression_and_the_column() -> None:
    """What a client sees for a bad expression: `args.invalid` with the field `expression` (and the `formula`
    alias accepted on the way)."""
    raw = {"inputs": {"s": "scene.tif"}, "formula": "(s[2] - s[1]) / (s[2] + s[1]", "output": "ndvi.tif"}

    with pytest.raises(ArgumentsInvalid) as caught:
        validate(TOOLS["raster_calc"], raw)

    (error,) = caught.value.errors
    assert error.field == "expression" and "column 17" in error.reason and "never closed" in error.reason
