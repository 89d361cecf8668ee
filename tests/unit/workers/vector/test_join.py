"""`vector_join` against geopandas' sjoin / sjoin_nearest and brute-force distances computed here."""

from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest
import shapely
from pydantic import ValidationError

from schemas.tools.overlay import VectorJoinArgs
from tests.unit.workers.vector.conftest import UTM, Write, at, box, parcels, read, zones
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.overlay import vector_join
from workers.vector import join


def points(write: Write, name: str = "points.gpkg", crs: str = UTM) -> Path:
    """Points inside, on the boundary of, near and far from the zones."""
    geoms = [at(60, 0), at(50, 30), at(100, 50), at(220, 70), at(160, 100), at(1000, 1000), at(47, 30)]
    fields = {"id": list(range(100, 107)), "value": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]}
    if crs != UTM:
        geoms = list(gpd.GeoSeries(geoms, crs=UTM).to_crs(crs))
    return write(name, geoms, fields, crs=crs)


def lines(write: Write) -> Path:
    """A line crossing a zone, one inside it, one along its edge, one far away."""
    geoms = [
        shapely.LineString([at(0, 0).coords[0], at(100, 0).coords[0]]),
        shapely.LineString([at(60, 0).coords[0], at(70, 10).coords[0]]),
        shapely.LineString([at(50, -20).coords[0], at(50, 70).coords[0]]),
        shapely.LineString([at(900, 900).coords[0], at(950, 950).coords[0]]),
    ]
    return write("lines.gpkg", geoms, {"id": [200, 201, 202, 203]})


def pairs_of(frame: gpd.GeoDataFrame, left: str = "id_1", right: str = "id_2") -> list[tuple[int, int]]:
    return sorted((int(a), int(b)) for a, b in zip(frame[left], frame[right], strict=True))


CASES = [
    ("points", "zones", "intersects", None),
    ("points", "zones", "within", None),
    ("points", "zones", "touches", None),
    ("points", "zones", "dwithin", 5.0),
    ("zones", "points", "contains", None),
    ("zones", "points", "covers", None),
    ("lines", "zones", "crosses", None),
    ("lines", "zones", "touches", None),
    ("parcels", "zones", "overlaps", None),
    ("parcels", "zones", "intersects", None),
]


@pytest.mark.parametrize(("first", "second", "predicate", "distance"), CASES)
def test_each_predicate_pairs_what_geopandas_pairs(
    write: Write, ctx: JobContext, first: str, second: str, predicate: str, distance: float | None
) -> None:
    paths = {"points": points(write), "zones": write("zones.gpkg", *zones()), "lines": lines(write)}
    paths["parcels"] = write("parcels.gpkg", *parcels())
    args = VectorJoinArgs(
        uri=paths[first].name,
        other=paths[second].name,
        output="out.gpkg",
        predicate=predicate,
        distance=distance,  # type: ignore[arg-type]
    )

    result = vector_join(args, ctx)

    a, b = read(paths[first]), read(paths[second])
    wanted = gpd.sjoin(a, b, predicate=predicate, distance=distance, lsuffix="1", rsuffix="2")
    written = read(ctx.roots[0] / "out.gpkg")
    assert pairs_of(written) == pairs_of(wanted)
    assert result.matched == wanted.index.nunique() and result.feature_count == len(wanted)


def test_a_left_join_keeps_the_unmatched_with_empty_fields(write: Write, ctx: JobContext) -> None:
    points(write)
    write("zones.gpkg", *zones())

    result = vector_join(VectorJoinArgs(uri="points.gpkg", other="zones.gpkg", output="out.gpkg", how="left"), ctx)

    wanted = gpd.sjoin(read(ctx.roots[0] / "points.gpkg"), read(ctx.roots[0] / "zones.gpkg"), how="left")
    written = read(ctx.roots[0] / "out.gpkg")
    assert len(written) == len(wanted) == result.feature_count
    assert written["id_1"].tolist() == sorted(written["id_1"].tolist())
    far = written[written["id_1"] == 105]
    assert len(far) == 1 and far["id_2"].isna().all() and far["kind"].isna().all()
    assert written["id_1"].nunique() == 7 and result.matched == 5


def test_one_feature_per_feature_with_aggregates(write: Write, ctx: JobContext) -> None:
    points(write)
    write("zones.gpkg", *zones())

    result = vector_join(
        VectorJoinArgs(
            uri="zones.gpkg",
            other="points.gpkg",
            output="out.gpkg",
            predicate="covers",
            how="left",
            aggregates={"value": ["sum", "max", "list"]},
        ),
        ctx,
    )

    joined = gpd.sjoin(read(ctx.roots[0] / "zones.gpkg"), read(ctx.roots[0] / "points.gpkg"), predicate="covers")
    sums = joined.groupby(level=0)["value"].sum()
    written = read(ctx.roots[0] / "out.gpkg")
    assert written.columns.tolist() == [
        "id",
        "name",
        "kind",
        "value_sum",
        "value_max",
        "value_list",
        "join_count",
        "geometry",
    ]
    assert written["value_sum"].tolist() == pytest.approx(sums.reindex([0, 1]).tolist())
    assert written["join_count"].tolist() == joined.index.value_counts().reindex([0, 1]).tolist()
    assert (result.feature_count, result.matched) == (2, 2)


def brute_nearest(
    a: gpd.GeoDataFrame, b: gpd.GeoDataFrame, k: int, limit: float | None
) -> list[tuple[int, int, float]]:
    out = []
    for i, g in enumerate(a.geometry):
        d = np.array([g.distance(h) for h in b.geometry])
        order = sorted(range(len(d)), key=lambda j: (d[j], j))[:k]
        out += [(int(a["id"][i]), int(b["id"][j]), float(d[j])) for j in order if limit is None or d[j] <= limit]
    return sorted(out)


@pytest.mark.parametrize(("k", "limit"), [(1, None), (2, None), (3, 60.0)])
def test_the_k_nearest_within_a_distance_equal_brute_force(
    write: Write, ctx: JobContext, k: int, limit: float | None
) -> None:
    points(write)
    write("parcels.gpkg", *parcels())

    result = vector_join(
        VectorJoinArgs(uri="points.gpkg", other="parcels.gpkg", output="out.gpkg", mode="nearest", k=k, distance=limit),
        ctx,
    )

    a, b = read(ctx.roots[0] / "points.gpkg"), read(ctx.roots[0] / "parcels.gpkg")
    written = read(ctx.roots[0] / "out.gpkg")
    got = sorted(zip(written["id_1"].astype(int), written["id_2"].astype(int), written["distance"], strict=True))
    wanted = brute_nearest(a, b, k, limit)
    assert [g[:2] for g in got] == [w[:2] for w in wanted]
    assert [g[2] for g in got] == pytest.approx([w[2] for w in wanted])
    if k == 1:
        nearest = gpd.sjoin_nearest(a, b, distance_col="d", lsuffix="1", rsuffix="2")  # every tie
        assert set(pairs_of(written)) <= set(pairs_of(nearest))
        assert written["id_1"].is_unique and set(written["id_1"]) == set(nearest["id_1"])
    assert result.mode == "nearest"


def test_a_second_layer_in_another_crs_is_reprojected_and_said(write: Write, ctx: JobContext) -> None:
    points(write, "points.geojson", crs="EPSG:4326")
    write("zones.gpkg", *zones())

    result = vector_join(VectorJoinArgs(uri="zones.gpkg", other="points.geojson", output="out.gpkg"), ctx)

    assert [(r.input, r.from_crs, r.to_crs) for r in result.reprojected] == [("other", "EPSG:4326", UTM)]
    wanted = gpd.sjoin(read(ctx.roots[0] / "zones.gpkg"), read(ctx.roots[0] / "points.geojson").to_crs(UTM))
    assert result.feature_count == len(wanted)


def test_field_errors_and_an_empty_result(write: Write, ctx: JobContext) -> None:
    points(write)
    write("zones.gpkg", *zones())
    write("far.gpkg", [box(5000, 5000, 5001, 5001)])

    with pytest.raises(JobFailed) as failed:
        vector_join(
            VectorJoinArgs(uri="zones.gpkg", other="points.gpkg", output="out.gpkg", aggregates={"nope": ["sum"]}), ctx
        )
    empty = vector_join(VectorJoinArgs(uri="points.gpkg", other="far.gpkg", output="out.gpkg"), ctx)

    assert (failed.value.code, failed.value.field) == ("field.not_found", "aggregates")
    assert "'nope'" in failed.value.message
    assert (empty.feature_count, empty.matched) == (0, 0)
    assert len(read(ctx.roots[0] / "out.gpkg")) == 0
    with pytest.raises(ValidationError, match="dwithin needs distance"):
        VectorJoinArgs(uri="a.gpkg", other="b.gpkg", output="c.gpkg", predicate="dwithin")
    with pytest.raises(ValidationError, match="distance is for predicate dwithin"):
        VectorJoinArgs(uri="a.gpkg", other="b.gpkg", output="c.gpkg", predicate="within", distance=3)


@pytest.mark.parametrize("at_once", [join._POINTS_AT_ONCE, 50])  # all points' candidates together, or 50 at a time
@pytest.mark.parametrize("predicate", ["intersects", "within", "touches"])
def test_points_are_matched_as_the_trees_own_predicate_query_matches_them(
    predicate: str, at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(join, "_POINTS_AT_ONCE", at_once)
    holed = shapely.Polygon([(0, 0), (10, 0), (10, 10), (0, 10)], [[(4, 4), (6, 4), (6, 6), (4, 6)]])
    multi = shapely.MultiPolygon([shapely.box(20, 0, 25, 5), shapely.box(30, 0, 35, 5)])
    polygons = np.array([holed, multi, shapely.box(8, 8, 12, 12), shapely.box(100, 100, 101, 101)])
    rng = np.random.default_rng(7)
    inside = list(shapely.points(rng.uniform(-2, 40, (300, 2))))
    edges = [shapely.Point(0, 5), shapely.Point(5, 4), shapely.Point(10, 10), shapely.Point(25, 2.5)]  # on rings
    points = np.array([*inside, *edges, None, shapely.Point(), shapely.Point(5, 5)], dtype=object)
    tree = shapely.STRtree(polygons)

    expected = tree.query(points, predicate=predicate)
    found = join.matches(shapely.STRtree(polygons), points, predicate)

    assert np.array_equal(np.stack(found), expected)
    assert expected.shape[1] > (0 if predicate == "touches" else 20)  # not a vacuous equality
