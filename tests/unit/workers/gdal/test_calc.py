"""Job `raster_calc`: band math on generated rasters (odd sizes, nodata, a geographic CRS), checked against NumPy
over the same arrays, and its failures by code and field."""

import gc
from pathlib import Path

import numpy as np
import pytest
import rasterio

from schemas.tools.raster_ops import RasterCalcArgs
from tests.unit.workers.gdal.conftest import RasterFactory
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.raster_ops import raster_calc

SIZE = (37, 53)


def scene(seed: int = 3, count: int = 2, dtype: str = "uint16") -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 5000, (count, *SIZE)).astype(dtype)


def read(path: str) -> tuple[np.ndarray, rasterio.profiles.Profile]:
    with rasterio.open(path) as out:
        return out.read(1), out.profile


def test_ndvi_of_two_bands_equals_numpy_and_nodata_in_either_band_is_nodata(
    ctx: JobContext, make_raster: RasterFactory
) -> None:
    data = scene()
    data[0, 3:9, 4:11] = 0  # nodata in band 1 only
    data[1, 20:22, 40:50] = 0  # and in band 2 only
    make_raster("s.tif", data=data, nodata=0, crs="EPSG:4326")
    args = RasterCalcArgs(inputs={"s": "s.tif"}, expression="(s[2] - s[1]) / (s[2] + s[1])", output="ndvi.tif")

    result = raster_calc(args, ctx)

    red, nir = data[0].astype("float64"), data[1].astype("float64")
    expected = ((nir - red) / (nir + red)).astype("float32")
    missing = (data[0] == 0) | (data[1] == 0)
    got, profile = read(result.output.path)
    assert np.array_equal(np.isnan(got), missing)
    assert np.array_equal(got[~missing], expected[~missing])
    assert profile["crs"].to_epsg() == 4326 and (profile["height"], profile["width"]) == SIZE
    assert result.valid_pixels == int((~missing).sum())
    assert result.nodata == "NaN" and result.bands_read == ["s[2]", "s[1]"]


def test_inputs_are_named_rasters_and_a_bare_name_is_band_one(ctx: JobContext, make_raster: RasterFactory) -> None:
    a = np.random.default_rng(1).normal(10, 3, SIZE).astype("float32")
    b = np.random.default_rng(2).normal(-4, 2, SIZE).astype("float32")
    a[0, 0] = -9999
    make_raster("a.tif", data=a, nodata=-9999, crs="EPSG:32633")
    make_raster("b.tif", data=b, crs="EPSG:32633")
    args = RasterCalcArgs(
        inputs={"a": "a.tif", "b": "b.tif"},
        expression="where(a > 10, sqrt(a) * b, minimum(a, b) ** 2)",
        output="out.tif",
        dtype="float64",
        nodata=-1e30,
    )

    result = raster_calc(args, ctx)

    wide_a, wide_b = a.astype("float64"), b.astype("float64")
    with np.errstate(invalid="ignore"):  # sqrt of the negatives `where` does not pick
        expected = np.where(wide_a > 10, np.sqrt(wide_a) * wide_b, np.minimum(wide_a, wide_b) ** 2)
    expected[0, 0] = -1e30
    got, profile = read(result.output.path)
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    assert profile["nodata"] == -1e30 and profile["dtype"] == "float64"


def test_integer_outputs_are_rounded_and_clipped_and_division_by_zero_is_nodata(
    ctx: JobContext, make_raster: RasterFactory
) -> None:
    a = np.arange(SIZE[0] * SIZE[1], dtype="int16").reshape(SIZE) - 900
    make_raster("a.tif", data=a)
    args = RasterCalcArgs(inputs={"a": "a.tif"}, expression="a * 0.5 + 100 / a", output="o.tif", dtype="uint8")

    result = raster_calc(args, ctx)

    with np.errstate(divide="ignore"):
        value = a * 0.5 + 100 / a.astype("float64")
    expected = np.clip(np.rint(value), 0, 255).astype("uint8")
    expected[a == 0] = 255  # not finite → the default nodata of uint8, its highest value
    got, profile = read(result.output.path)
    assert np.array_equal(got, expected)
    assert profile["nodata"] == 255


def test_a_band_the_input_lacks_fails_naming_the_expression(ctx: JobContext, make_raster: RasterFactory) -> None:
    make_raster("s.tif", data=scene(count=2))

    with pytest.raises(JobFailed) as caught:
        raster_calc(RasterCalcArgs(inputs={"s": "s.tif"}, expression="s[3] - s[1]", output="o.tif"), ctx)

    assert (caught.value.code, caught.value.field) == ("band.out_of_range", "expression")
    assert not (ctx.roots[0] / "o.tif").exists()


def test_inputs_on_different_grids_fail_naming_the_input(ctx: JobContext, make_raster: RasterFactory) -> None:
    make_raster("a.tif", size=SIZE)
    make_raster("b.tif", size=(SIZE[0] + 1, SIZE[1]))

    with pytest.raises(JobFailed) as caught:
        raster_calc(RasterCalcArgs(inputs={"a": "a.tif", "b": "b.tif"}, expression="a + b", output="o.tif"), ctx)

    assert (caught.value.code, caught.value.field) == ("raster.misaligned", "inputs.b")


def test_a_missing_input_fails_naming_it(ctx: JobContext, make_raster: RasterFactory) -> None:
    make_raster("a.tif")

    with pytest.raises(JobFailed) as caught:
        raster_calc(RasterCalcArgs(inputs={"a": "a.tif", "b": "nope.tif"}, expression="a + b", output="o.tif"), ctx)

    assert (caught.value.code, caught.value.field) == ("path.not_found", "inputs.b")


def test_types_numexpr_cannot_combine_fail_as_an_invalid_expression(
    ctx: JobContext, make_raster: RasterFactory, tmp_path: Path
) -> None:
    make_raster("a.tif")

    with pytest.raises(JobFailed) as caught:
        raster_calc(RasterCalcArgs(inputs={"a": "a.tif"}, expression="a & 3", output="o.tif"), ctx)
    assert (caught.value.code, caught.value.field) == ("expression.invalid", "expression")
    assert not list(tmp_path.glob("*o*.tif"))  # no partial output, no leftover temporary


def test_a_failed_open_closes_its_inputs_at_once(ctx: JobContext, make_raster: RasterFactory) -> None:
    """Inputs opened before a check failed are closed then, not left to the garbage collector: a suspended open
    exits its GDAL environment in whatever runs when it is collected (rasterio's "No GDAL environment exists")."""
    make_raster("a.tif", size=SIZE)
    make_raster("b.tif", size=(SIZE[0] + 1, SIZE[1]))
    args = RasterCalcArgs(inputs={"a": "a.tif", "b": "b.tif"}, expression="a + b", output="o.tif")
    try:
        raster_calc(args, ctx)
    except JobFailed as failed:
        frames = failed.__traceback__  # what a caller holding the error keeps alive

    with rasterio.Env():
        del frames
        gc.collect()
        assert rasterio.env.local._env is not None  # this block's environment is still there


@pytest.mark.parametrize(
    "expression",
    ["a ** 1e308", "a ** 1e308 ** 1e308", "True / False + a", "a + 1" + "0" * 400],
)
def test_expressions_numexpr_cannot_compute_fail_on_the_expression_before_any_output(
    expression: str, ctx: JobContext, make_raster: RasterFactory, tmp_path: Path
) -> None:
    """The arguments as the queue carries them, unchecked (a worker trusts no queue): what the gateway would refuse
    and what only numexpr refuses (`a ** 1e308`) end the same way, naming `expression`."""
    make_raster("a.tif")
    args = RasterCalcArgs.model_construct(inputs={"a": "a.tif"}, expression=expression, output="o.tif")

    with pytest.raises(JobFailed) as caught:
        raster_calc(args, ctx)

    assert (caught.value.code, caught.value.field) == ("expression.invalid", "expression")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tif"]


def test_a_300_digit_constant_is_a_number_like_any_other(ctx: JobContext, make_raster: RasterFactory) -> None:
    make_raster("a.tif", data=np.full(SIZE, 2, dtype="float32"))
    args = RasterCalcArgs(
        inputs={"a": "a.tif"}, expression="where(a > 0, " + "9" * 300 + ", 0) / a", output="o.tif", dtype="float64"
    )

    got, _ = read(raster_calc(args, ctx).output.path)

    assert np.all(got == 1e300 / 2)
