"""Job `raster_mosaic`: overlapping rasters with nodata holes merged by each overlap rule, checked against NumPy on
the union grid; an input in another CRS warped onto the first one's grid; failures by code and field; and the
preflight gate on its resampling."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import rasterio
from affine import Affine
from pyproj import Transformer

from schemas.preflight.keys import needed_for
from schemas.tools import TOOLS
from schemas.tools.raster_ops import RasterMosaicArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster_ops import raster_mosaic

ROWS, RES, LEFT, TOP = 21, 100.0, 400_000.0, 5_000_000.0
NODATA = -9999.0
CancelledAtLastReport = Callable[[Callable[[str, JobContext], object]], None]


def write(path: Path, data: np.ndarray, col_off: int, crs: str = "EPSG:32633", nodata: float | None = NODATA) -> None:
    profile = {"driver": "GTiff", "width": data.shape[1], "height": data.shape[0], "count": 1, "dtype": "float32"}
    transform = Affine(RES, 0, LEFT + col_off * RES, 0, -RES, TOP)
    with rasterio.open(path, "w", crs=crs, transform=transform, nodata=nodata, **profile) as dst:
        dst.write(data, 1)


def layers(tmp_path: Path) -> list[np.ndarray]:
    """Three rasters on one grid, at columns 0–36, 20–52 and 30–42, each with a hole; as masked arrays on the union
    grid (53 columns)."""
    rng = np.random.default_rng(9)
    placed = []
    for index, (offset, width) in enumerate([(0, 37), (20, 33), (30, 13)]):
        data = rng.normal(100 * (index + 1), 20, (ROWS, width)).astype("float32")
        data[3 + index : 9 + index, 2 : 6 + index] = NODATA
        write(tmp_path / f"t{index}.tif", data, offset)
        full = np.full((ROWS, 53), NODATA, dtype="float32")
        full[:, offset : offset + width] = data
        placed.append(np.ma.masked_equal(full, NODATA))
    return placed


def expected(placed: list[np.ndarray], method: str) -> np.ndarray:
    stack = np.ma.stack(placed)
    if method == "first":
        out = placed[0].copy()
        for layer in placed[1:]:
            out = np.ma.where(np.ma.getmaskarray(out), layer, out)
    elif method == "last":
        out = placed[-1].copy()
        for layer in reversed(placed[:-1]):
            out = np.ma.where(np.ma.getmaskarray(out), layer, out)
    else:
        out = {"min": stack.min, "max": stack.max, "mean": stack.mean}[method](axis=0)
    return np.ma.filled(out.astype("float32"), NODATA)


@pytest.mark.parametrize("method", ["first", "last", "min", "max", "mean"])
def test_each_overlap_rule_equals_numpy_over_the_valid_values(ctx: JobContext, tmp_path: Path, method: str) -> None:
    placed = layers(tmp_path)
    args = RasterMosaicArgs(inputs=["t0.tif", "t1.tif", "t2.tif"], output="m.tif", resampling="nearest", method=method)

    result = raster_mosaic(args, ctx)

    with rasterio.open(result.output.path) as out:
        got, transform, nodata = out.read(1), out.transform, out.nodata
    want = expected(placed, method)
    assert got.shape == want.shape and transform == Affine(RES, 0, LEFT, 0, -RES, TOP) and nodata == NODATA
    if method == "mean":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        assert np.array_equal(got, want)
    assert result.reprojected == [] and result.method == method


@pytest.mark.parametrize("method", ["first", "mean"])
def test_a_cancel_that_lands_with_the_last_report_leaves_no_file(
    tmp_path: Path, cancelled_at_last_report: CancelledAtLastReport, method: str
) -> None:
    layers(tmp_path)

    def run(output: str, ctx: JobContext) -> object:
        inputs = ["t0.tif", "t1.tif", "t2.tif"]
        return raster_mosaic(RasterMosaicArgs(inputs=inputs, output=output, resampling="nearest", method=method), ctx)

    cancelled_at_last_report(run)


def test_an_input_in_another_crs_is_warped_onto_the_first_ones_grid(ctx: JobContext, tmp_path: Path) -> None:
    write(tmp_path / "utm.tif", np.full((ROWS, 30), NODATA, dtype="float32"), 0)
    to_web = Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True)
    x0, y1 = to_web.transform(LEFT + 500, TOP - 300)
    x1, y0 = to_web.transform(LEFT + 2500, TOP - 1700)
    web = np.full((40, 40), 7.0, dtype="float32")
    profile = {"driver": "GTiff", "width": 40, "height": 40, "count": 1, "dtype": "float32", "crs": "EPSG:3857"}
    with rasterio.open(tmp_path / "web.tif", "w", transform=Affine((x1 - x0) / 40, 0, x0, 0, -(y1 - y0) / 40, y1),
                       **profile) as dst:  # fmt: skip
        dst.write(web, 1)

    args = RasterMosaicArgs(inputs=["utm.tif", "web.tif"], output="m.tif", resampling="bilinear")
    result = raster_mosaic(args, ctx)

    with rasterio.open(result.output.path) as out:
        got, transform, crs = out.read(1), out.transform, out.crs
    assert crs.to_epsg() == 32633 and (transform.a, -transform.e) == (RES, RES)
    assert (transform.c - LEFT) % RES == 0 and (TOP - transform.f) % RES == 0  # on the first raster's grid
    rows, cols = np.nonzero(got != NODATA)
    assert np.allclose(got[rows, cols], 7.0)
    inner = got[5:14, 7:22]  # well inside the warped footprint (rows 3–17, columns 5–25 of the first grid)
    assert (inner == 7.0).all()
    assert [r.model_dump() for r in result.reprojected] == [
        {"input": "inputs[1]", "from_crs": "EPSG:3857", "to_crs": "EPSG:32633"}
    ]
    assert result.summary().endswith("; inputs[1] reprojected from EPSG:3857 to EPSG:32633")


def test_inputs_with_different_band_counts_fail_naming_the_input(
    ctx: JobContext, tmp_path: Path, make_raster: object
) -> None:
    write(tmp_path / "a.tif", np.zeros((ROWS, 10), dtype="float32"), 0)
    profile = {"driver": "GTiff", "width": 10, "height": ROWS, "count": 2, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(tmp_path / "b.tif", "w", transform=Affine(RES, 0, LEFT, 0, -RES, TOP), **profile) as dst:
        dst.write(np.zeros((2, ROWS, 10), dtype="float32"))

    with pytest.raises(JobFailed) as caught:
        raster_mosaic(RasterMosaicArgs(inputs=["a.tif", "b.tif"], output="m.tif", resampling="nearest"), ctx)

    assert (caught.value.code, caught.value.field) == ("raster.band_count", "inputs[1]")
    assert not (tmp_path / "m.tif").exists()


def test_the_resampling_of_a_mosaic_needs_a_justification_like_a_reprojections() -> None:
    """Resampling changes what the values mean (preflight, seed 000): the gate asks for the same justification a
    reprojection with that method needs, so one justification serves both tools."""
    mosaic = needed_for(TOOLS["raster_mosaic"], {"resampling": "cubic"})
    reproject = needed_for(TOOLS["raster_reproject"], {"resampling": "cubic", "dst_crs": "EPSG:3857"})

    assert [(n.domain, n.prompt_args) for n in mosaic] == [("resampling", {"method": "cubic"})]
    assert mosaic[0].hash in {n.hash for n in reproject}
