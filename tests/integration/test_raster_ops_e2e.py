"""The analysis tools end to end over real HTTP (issue 32 part A): band math with progress and values checked against
NumPy, a bad expression refused by the gateway naming the field and column, terrain and clip results in the file,
and a mosaic behind the preflight gate on its resampling."""

from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from mcp import Client

from tests.integration.conftest import Stack
from tests.support import justify

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TALL = (4200, 2048)
"""Rows, columns: three rows of the default 2048-pixel windows, so three progress reports (one window wide: a grid
thinner than a window is cut into strips of a window's area instead, `workers.tiling.grid`)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write(path: Path, data: np.ndarray, nodata: float | None = None, left: float = 10.0) -> None:
    """Under the workspace's `analysis/` folder (a name of its own: other tests complete the workspace's files)."""
    path.parent.mkdir(exist_ok=True)
    count, height, width = data.shape
    profile = {"driver": "GTiff", "width": width, "height": height, "count": count, "dtype": data.dtype.name}
    with rasterio.open(path, "w", crs="EPSG:4326", transform=Affine(0.001, 0, left, 0, -0.001, 50.0), nodata=nodata,
                       **profile) as dst:  # fmt: skip
        dst.write(data)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_band_math_reports_progress_and_writes_what_numpy_computes(stack: Stack, mode: str) -> None:
    data = np.random.default_rng(21).integers(0, 3000, (2, *TALL)).astype("uint16")
    write(stack.workspace / "analysis/scene-e2e.tif", data, nodata=0)
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    args = {"inputs": {"s": "analysis/scene-e2e.tif"}, "expression": "(s[2] - s[1]) / (s[2] + s[1])",
            "output": f"analysis/ndvi-{mode}.tif", "overwrite": True}  # fmt: skip
    async with Client(stack.url, mode=mode) as client:
        result = await client.call_tool("raster_calc", args, progress_callback=on_progress)

    assert not result.is_error, result.content
    red, nir = data[0].astype("float64"), data[1].astype("float64")
    missing = (data[0] == 0) | (data[1] == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = ((nir - red) / (nir + red)).astype("float32")
    with rasterio.open(stack.workspace / f"analysis/ndvi-{mode}.tif") as out:
        got = out.read(1)
    assert np.array_equal(np.isnan(got), missing) and np.array_equal(got[~missing], expected[~missing])
    assert result.structured_content["valid_pixels"] == int((~missing).sum())
    assert seen[-1] == (3.0, 3.0) and len(seen) >= 2  # progress is reported by rows of windows (may be coalesced)
    assert [p for p, _ in seen] == sorted({p for p, _ in seen})


async def test_a_bad_expression_is_refused_by_the_gateway_naming_field_and_column(stack: Stack) -> None:
    args = {"inputs": {"s": "analysis/scene-e2e.tif"}, "expression": "s[1] + os.system('x')"}
    args["output"] = "analysis/never.tif"
    async with Client(stack.url) as client:
        result = await client.call_tool("raster_calc", args)

    error = result.structured_content["error"]
    assert result.is_error and error["code"] == "args.invalid"
    (field,) = error["errors"]
    assert field["field"] == "expression" and field["reason"].startswith("Value error, column 8:")
    assert not (stack.workspace / "analysis/never.tif").exists()


async def test_expressions_without_a_finite_value_end_as_field_errors_naming_expression(stack: Stack) -> None:
    """Constant parts that overflow or divide by zero are refused by the gateway with their column; a power numexpr
    alone refuses fails on the worker before any output. Each used to end as `job.crashed`."""
    write(stack.workspace / "analysis/calc-limits.tif", np.ones((1, 8, 8), dtype="float32"))
    base = {"inputs": {"a": "analysis/calc-limits.tif"}, "output": "analysis/never-limits.tif"}
    async with Client(stack.url) as client:
        folded = [
            await client.call_tool("raster_calc", base | {"expression": e})
            for e in ("a ** 1e308 ** 1e308", "True / False + a", "a + 1" + "0" * 400)
        ]
        power = await client.call_tool("raster_calc", base | {"expression": "a ** 1e308"})

    for result in folded:
        error = result.structured_content["error"]
        assert result.is_error and error["code"] == "args.invalid", error
        assert [e["field"] for e in error["errors"]] == ["expression"]
    error = power.structured_content["error"]
    assert power.is_error and (error["code"], error["field"]) == ("expression.invalid", "expression"), error
    assert not (stack.workspace / "analysis/never-limits.tif").exists()


async def test_slope_of_a_geographic_dem_and_a_clip_by_a_box_land_in_their_files(stack: Stack) -> None:
    rows, cols = np.mgrid[0:120, 0:150]
    write(stack.workspace / "analysis/dem-e2e.tif", (rows * 3.0 + cols * 2.0)[np.newaxis].astype("float32"))
    async with Client(stack.url) as client:
        terrain = {"uri": "analysis/dem-e2e.tif", "output": "analysis/slope-e2e.tif", "product": "slope"}
        slope = await client.call_tool("raster_terrain", terrain | {"overwrite": True})
        box = {"bounds": [10.0203, 49.9, 10.05, 49.96], "overwrite": True}
        clip = await client.call_tool(
            "raster_clip", {"uri": "analysis/dem-e2e.tif", "output": "analysis/clip-e2e.tif"} | box
        )

    assert not slope.is_error and not clip.is_error, (slope.content, clip.content)
    assert slope.structured_content["geographic"] is True
    with rasterio.open(stack.workspace / "analysis/slope-e2e.tif") as out:
        assert (out.read(1)[1:-1, 1:-1] > 0).all() and out.crs.to_epsg() == 4326
    with rasterio.open(stack.workspace / "analysis/clip-e2e.tif") as out:
        assert (out.width, out.height) == (clip.structured_content["width"], clip.structured_content["height"])
        assert (out.width, out.height) == (30, 60)  # columns 20–49, rows 40–99 of the 0.001° grid


async def test_a_mosaic_asks_for_its_resampling_justification_then_runs(stack: Stack) -> None:
    write(stack.workspace / "analysis/left-e2e.tif", np.full((1, 40, 30), 1.0, dtype="float32"))
    write(stack.workspace / "analysis/right-e2e.tif", np.full((1, 40, 30), 2.0, dtype="float32"), left=10.02)
    args = {"inputs": ["analysis/left-e2e.tif", "analysis/right-e2e.tif"], "output": "analysis/mosaic-e2e.tif",
            "resampling": "mode", "method": "max", "overwrite": True}  # fmt: skip

    async with Client(stack.url) as blind:
        hint = await blind.call_tool("raster_mosaic", args)
    async with Client(stack.url, sampling_callback=justify) as client:
        done = await client.call_tool("raster_mosaic", args)

    assert hint.is_error and hint.structured_content["preflight"]["tool"] == "raster_mosaic"
    assert [r["domain"] for r in hint.structured_content["preflight"]["required"]] == ["resampling"]
    assert not done.is_error, done.content
    with rasterio.open(stack.workspace / "analysis/mosaic-e2e.tif") as out:
        merged = out.read(1)
    assert merged.shape == (40, 50) and (merged[:, :20] == 1).all() and (merged[:, 20:] == 2).all()
