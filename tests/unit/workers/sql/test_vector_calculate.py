"""`vector_calculate` on layers written here: filters and fields checked against geopandas, shapely and pyproj's
Geod; expressions outside the grammar refused naming their argument."""

from pathlib import Path

import geopandas as gpd
import numpy as np
import pyogrio
import pytest
import shapely
from pydantic import ValidationError
from pyproj import Geod

from schemas.tools.sql import VectorCalculateArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.sql import vector_calculate

GEOD = Geod(ellps="WGS84")


@pytest.fixture
def ctx(tmp_path: Path) -> JobContext:
    return JobContext(call_id="test-call", roots=[tmp_path])


@pytest.fixture
def blocks(tmp_path: Path) -> gpd.GeoDataFrame:
    """Projected polygons with a population field, one with a hole, written as GeoPackage."""
    rng = np.random.default_rng(3)
    shapes = [shapely.box(500_000 + 300 * i, 4_000_000, 500_000 + 300 * i + 50 * (i + 1), 4_000_200) for i in range(8)]
    shapes[2] = shapes[2].difference(shapely.box(500_610, 4_000_050, 500_640, 4_000_100))
    frame = gpd.GeoDataFrame(
        {"name": [f"b{i}" for i in range(8)], "population": rng.integers(0, 5000, 8)}, geometry=shapes, crs=32633
    )
    frame.to_file(tmp_path / "blocks.gpkg")
    return frame


def calculate(ctx: JobContext, **kwargs: object) -> object:
    args = {"uri": "blocks.gpkg", "output": "out.gpkg", **kwargs}
    return vector_calculate(VectorCalculateArgs(**args), ctx)  # type: ignore[arg-type]


def test_a_filter_and_fields_match_geopandas(ctx: JobContext, blocks: gpd.GeoDataFrame) -> None:
    result = calculate(
        ctx,
        where="population > 1000 AND ST_Area(geom) > 15000",
        fields={"density": "population / (ST_Area(geom) / 1e6)", "name": "upper(name)"},
    )

    written = gpd.read_file(ctx.roots[0] / "out.gpkg")
    kept = blocks[(blocks.population > 1000) & (blocks.area > 15000)]
    assert list(written["name"]) == [n.upper() for n in kept["name"]]
    np.testing.assert_allclose(written["density"], kept.population / (kept.area / 1e6), rtol=1e-12)
    assert (result.feature_count, result.source_feature_count) == (len(kept), len(blocks))
    assert (result.added, result.replaced) == (["density"], ["name"])
    assert list(written.columns) == ["name", "population", "density", "geometry"]
    assert written.crs.to_epsg() == 32633


@pytest.mark.parametrize("crs", ["EPSG:32633", "EPSG:4326"])
def test_ellipsoid_measures_match_pyproj_in_any_crs(ctx: JobContext, blocks: gpd.GeoDataFrame, crs: str) -> None:
    blocks.to_crs(crs).to_file(ctx.roots[0] / "moved.gpkg")

    calculate(
        ctx,
        uri="moved.gpkg",
        fields={"area": "area_m2(geom)", "perimeter": "perimeter_m(geom)"},
    )

    written = gpd.read_file(ctx.roots[0] / "out.gpkg")
    geographic = shapely.normalize(blocks.to_crs("EPSG:4326").geometry.values)
    expected = [GEOD.geometry_area_perimeter(g) for g in geographic]
    np.testing.assert_allclose(written["area"], [abs(a) for a, _ in expected], rtol=1e-6)
    rings = [GEOD.geometry_length(shapely.boundary(g)) for g in geographic]  # holes count, as in ST_Perimeter
    np.testing.assert_allclose(written["perimeter"], rings, rtol=1e-6)
    assert rings[2] > expected[2][1]  # the block with a hole


def test_line_lengths_on_the_ellipsoid(ctx: JobContext) -> None:
    lines = [shapely.LineString([(10, 50), (10.5, 50.2), (11, 50)]), shapely.LineString([(0, 0), (0, 1)])]
    gpd.GeoDataFrame({"id": [1, 2]}, geometry=lines, crs=4326).to_file(ctx.roots[0] / "lines.gpkg")

    calculate(ctx, uri="lines.gpkg", output="lengths.gpkg", fields={"metres": "length_m(geom)"})

    written = gpd.read_file(ctx.roots[0] / "lengths.gpkg")
    np.testing.assert_allclose(written["metres"], [GEOD.geometry_length(line) for line in lines], rtol=1e-6)


def test_a_filter_that_keeps_nothing_writes_an_empty_layer(ctx: JobContext, blocks: gpd.GeoDataFrame) -> None:
    result = calculate(ctx, where="population < 0")

    assert result.feature_count == 0
    assert pyogrio.read_info(ctx.roots[0] / "out.gpkg")["features"] == 0


@pytest.mark.parametrize(
    ("argument", "expression"),
    [
        ("where", "(SELECT count(*) FROM read_csv('/etc/passwd')) > 0"),
        ("where", "population IN (SELECT 1)"),
        ("where", "EXISTS (SELECT 1)"),
        ("fields.total", "sum(population)"),
        ("fields.rank", "row_number() OVER ()"),
        ("fields.x", "list_transform([1, 2], x -> x + 1)"),
        ("fields.x", "current_setting('threads')"),
        ("fields.x", "getvariable('secret')"),
        ("fields.x", "1) AS x FROM read_csv('/etc/passwd') --"),
        ("fields.x", "1 AS y, 2"),
        ("where", "population > 1 /*"),
        ("where", "population > 1; COPY layer TO 'x.csv'"),
        ("where", "main.layer.population > 1"),
    ],
)
def test_an_expression_outside_the_grammar_is_refused_naming_its_argument(
    ctx: JobContext, blocks: gpd.GeoDataFrame, argument: str, expression: str
) -> None:
    kwargs = {"where": expression} if argument == "where" else {"fields": {argument.split(".")[1]: expression}}

    with pytest.raises(JobFailed) as failed:
        calculate(ctx, **kwargs)

    assert failed.value.field == argument
    assert failed.value.code in ("expression.refused", "expression.invalid", "field.not_found")
    assert not (ctx.roots[0] / "out.gpkg").exists()


def test_a_field_the_layer_lacks_is_named(ctx: JobContext, blocks: gpd.GeoDataFrame) -> None:
    with pytest.raises(JobFailed) as failed:
        calculate(ctx, where="populaton > 10")

    assert (failed.value.code, failed.value.field) == ("field.not_found", "where")
    assert "populaton" in failed.value.message and "population" in failed.value.message


def test_something_to_do_is_required() -> None:
    with pytest.raises(ValidationError, match="where, fields or both"):
        VectorCalculateArgs(uri="blocks.gpkg", output="out.gpkg")
