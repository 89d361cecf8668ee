"""`vector_dissolve` against geopandas' dissolve and pandas' aggregates computed here on reference layers."""

import json

import geopandas as gpd
import pytest
import shapely

from schemas.tools.overlay import VectorDissolveArgs
from tests.unit.workers.vector.conftest import UTM, Write, box, parcels, read
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.overlay import vector_dissolve


def blocks(write: Write) -> None:
    """Six squares in a row, in groups a (touching), b (apart), and one without a group."""
    geoms = [box(i * 10, 0, i * 10 + 10, 10) for i in range(4)] + [box(100, 0, 110, 10), box(200, 0, 210, 10)]
    fields = {
        "group": ["a", "a", "a", "b", "b", None],
        "pop": [1, 2, 3, 10, 20, 7],
        "label": ["p", "q", "r", "s", "t", "u"],
    }
    write("blocks.gpkg", geoms, fields)


def test_dissolve_by_a_field_equals_geopandas_with_every_aggregate(write: Write, ctx: JobContext) -> None:
    blocks(write)
    hows = ["first", "count", "sum", "mean", "min", "max"]

    result = vector_dissolve(
        VectorDissolveArgs(
            uri="blocks.gpkg", output="out.gpkg", by=["group"], aggregates={"pop": [*hows, "list"], "label": ["max"]}
        ),
        ctx,
    )

    source = read(ctx.roots[0] / "blocks.gpkg")
    wanted = source.dissolve(by="group", dropna=False, sort=True, aggfunc={"pop": hows}).reset_index()
    written = read(ctx.roots[0] / "out.gpkg")
    assert list(written.columns) == ["group", *[f"pop_{h}" for h in hows], "pop_list", "label_max", "geometry"]
    assert written["group"][:2].tolist() == ["a", "b"] and written["group"].isna()[2]  # written as NULL
    for how in hows:
        assert written[f"pop_{how}"].tolist() == pytest.approx(wanted[("pop", how)].tolist())
    assert [json.loads(v) for v in written["pop_list"]] == [[1, 2, 3], [10, 20], [7]]
    assert written["label_max"].tolist() == ["r", "t", "u"]
    for got, want in zip(written.geometry, wanted.geometry, strict=True):
        assert got.symmetric_difference(want).area == pytest.approx(0, abs=1e-9)
    assert shapely.get_num_geometries(written.geometry.values.to_numpy()).tolist() == [1, 2, 1]
    assert result.geometry_type == "MultiPolygon"
    assert (result.feature_count, result.by, result.input_feature_counts) == (3, ["group"], [6])


def test_dissolve_without_fields_merges_everything_keeping_holes(write: Write, ctx: JobContext) -> None:
    geoms, fields = parcels()
    write("parcels.gpkg", geoms, fields)

    result = vector_dissolve(VectorDissolveArgs(uri="parcels.gpkg", output="out.gpkg"), ctx)

    written = read(ctx.roots[0] / "out.gpkg")
    assert list(written.columns) == ["geometry"] and result.feature_count == 1
    whole = shapely.union_all(geoms)
    assert written.geometry[0].symmetric_difference(whole).area == pytest.approx(0, abs=1e-9)
    assert written.area[0] == pytest.approx(100 * 100 - 20 * 20 + 2 * 50 * 50 + 50 * 100)
    assert written.crs == UTM


def test_dissolve_by_two_fields(write: Write, ctx: JobContext) -> None:
    geoms = [box(0, 0, 1, 1), box(1, 0, 2, 1), box(2, 0, 3, 1)]
    write("cells.gpkg", geoms, {"a": [1, 1, 1], "b": ["x", "x", "y"]})

    vector_dissolve(VectorDissolveArgs(uri="cells.gpkg", output="out.gpkg", by=["a", "b"]), ctx)

    written = read(ctx.roots[0] / "out.gpkg")
    assert written[["a", "b"]].values.tolist() == [[1, "x"], [1, "y"]]
    assert written.area.tolist() == pytest.approx([2.0, 1.0])


@pytest.mark.parametrize(
    ("by", "aggregates", "code", "field"),
    [
        (["nope"], {}, "field.not_found", "by"),
        (["group"], {"missing": ["sum"]}, "field.not_found", "aggregates"),
        (["group"], {"label": ["sum"]}, "field.not_numeric", "aggregates"),
    ],
)
def test_a_field_error_names_the_field(
    write: Write, ctx: JobContext, by: list[str], aggregates: dict[str, list[str]], code: str, field: str
) -> None:
    blocks(write)

    with pytest.raises(JobFailed) as failed:
        vector_dissolve(VectorDissolveArgs(uri="blocks.gpkg", output="out.gpkg", by=by, aggregates=aggregates), ctx)  # type: ignore[arg-type]

    assert (failed.value.code, failed.value.field) == (code, field)
    assert repr((by + list(aggregates))[-1]) in failed.value.message
    assert not (ctx.roots[0] / "out.gpkg").exists()


def test_an_empty_layer_dissolves_into_an_empty_layer(write: Write, ctx: JobContext) -> None:
    frame = gpd.GeoDataFrame({"group": ["a"]}, geometry=[box(0, 0, 1, 1)], crs=UTM).iloc[:0]
    frame.to_file(ctx.roots[0] / "empty.gpkg")

    result = vector_dissolve(VectorDissolveArgs(uri="empty.gpkg", output="out.gpkg", by=["group"]), ctx)

    assert result.feature_count == 0
    assert len(read(ctx.roots[0] / "out.gpkg")) == 0
