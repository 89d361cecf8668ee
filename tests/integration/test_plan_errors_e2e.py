"""Answers an agent can act on, through the SDK client (issue 49): a clip box that misses the raster, and a plan
with a broken reference, a missing band and such a box, are typed errors naming the argument and what would be
valid (`structuredContent.error.details`), before anything is written."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
from mcp import Client
from rasterio.transform import from_origin

from tests.integration.conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _dem(folder: Path) -> list[float]:
    """A one-band DEM in EPSG:32633; its bounds."""
    folder.mkdir(exist_ok=True)
    profile = {"driver": "GTiff", "width": 40, "height": 30, "count": 1, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(folder / "dem.tif", "w", transform=from_origin(500000, 4100000, 30, 30), **profile) as dst:
        dst.write(np.ones((1, 30, 40), dtype="float32"))
        return list(dst.bounds)


async def _error(client: Client, tool: str, args: dict[str, object]) -> dict:
    answer = await client.call_tool(tool, args)
    assert answer.is_error, answer.structured_content
    return (answer.structured_content or {})["error"]


async def test_a_box_that_misses_the_raster_names_bounds_and_the_rasters_extent_in_the_boxs_crs(stack: Stack) -> None:
    bounds = _dem(stack.workspace / "acts")
    box = {"uri": "acts/dem.tif", "output": "acts/new/clip.tif", "bounds": [500000, 0, 501000, 1000]}
    async with Client(stack.url) as client:
        error = await _error(client, "raster_clip", box)
        geographic = await _error(client, "raster_clip", box | {"bounds": [20, 10, 21, 11], "bounds_crs": "EPSG:4326"})

    assert (error["code"], error["field"]) == ("clip.no_overlap", "bounds")
    assert error["details"] == {"valid": bounds, "crs": "EPSG:32633"}
    west, south, east, north = geographic["details"]["valid"]
    assert 14.9 < west < east < 15.1 and 37 < south < north < 37.1 and geographic["details"]["crs"] == "EPSG:4326"
    assert not (stack.workspace / "acts" / "new").exists()


async def test_a_plan_is_refused_with_every_problem_a_client_can_act_on(stack: Stack) -> None:
    bounds = _dem(stack.workspace / "plan_errors")
    dem, out = "plan_errors/dem.tif", "plan_errors/"
    steps = [
        {"id": "clip", "tool": "raster_clip", "args": {"uri": dem, "output": out + "c.tif", "bounds": [0, 0, 10, 10]}},
        {"id": "shade", "tool": "raster_terrain", "args": {"uri": dem, "output": out + "h.tif", "product": "slope"}},
        {"id": "stats", "tool": "raster_stats", "args": {"uri": {"$ref": "clp.output.path"}}},  # no step `clp`
    ]
    steps[1]["args"]["band"] = 2  # the DEM has one
    async with Client(stack.url) as client:
        error = await _error(client, "plan_run", {"steps": steps})

    assert error["code"] == "plan.invalid"
    found = {(p["step"], p["argument"], p["code"]): p["valid"] for p in error["details"]["problems"]}
    assert found == {
        ("clip", "bounds", "clip.no_overlap"): bounds,
        ("shade", "band", "band.not_found"): [1, 1],
        ("stats", "uri", "plan.bad_reference"): ["clip", "shade"],
    }
    assert not (stack.workspace / "plan_errors" / "c.tif").exists()
