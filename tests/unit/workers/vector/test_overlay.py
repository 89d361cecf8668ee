"""`vector_overlay` against geopandas.overlay computed here on the same reference layers."""

from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from schemas.tools.overlay import VectorOverlayArgs
from tests.unit.workers.vector.conftest import UTM, Write, at, bounded, box, parcels, read, zones
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.overlay import vector_overlay
from workers.vector import overlay

HOWS = ["intersection", "union", "difference", "symmetric_difference", "identity"]


def expected(first: Path, second: Path, how: str) -> gpd.GeoDataFrame:
    a, b = read(first), read(second).to_crs(UTM)
    shared = (set(a.columns) & set(b.columns)) - {"geometry"}
    a = a.rename(columns={c: f"{c}_1" for c in shared})
    b = b.rename(columns={c: f"{c}_2" for c in shared})
    return gpd.overlay(a, b, how=how, keep_geom_type=True)


def same_features(written: gpd.GeoDataFrame, wanted: gpd.GeoDataFrame) -> None:
    assert list(written.columns) == list(wanted.columns)
    assert len(written) == len(wanted)
    keys = [c for c in wanted.columns if c != "geometry"]
    w = written.sort_values(keys, na_position="first").reset_index(drop=True)
    e = wanted.sort_values(keys, na_position="first").reset_index(drop=True)
    assert w[keys].astype(str).equals(e[keys].astype(str))
    for got, want in zip(w.geometry, e.geometry, strict=True):
        assert got.symmetric_difference(want).area <= 1e-9 * max(want.area, 1.0)


@pytest.mark.parametrize("how", HOWS)
def test_each_overlay_equals_geopandas(write: Write, ctx: JobContext, how: str) -> None:
    first, second = write("parcels.gpkg", *parcels()), write("zones.gpkg", *zones())

    result = vector_overlay(VectorOverlayArgs(uri="parcels.gpkg", other="zones.gpkg", output="out.gpkg", how=how), ctx)

    wanted = expected(first, second, how)
    same_features(read(ctx.roots[0] / "out.gpkg"), wanted)
    assert (result.feature_count, result.input_feature_counts, result.reprojected) == (len(wanted), [3, 2], [])
    assert result.crs == UTM


def test_shared_attribute_names_take_the_suffixes(write: Write, ctx: JobContext) -> None:
    write("parcels.gpkg", *parcels())
    write("zones.gpkg", *zones())

    vector_overlay(
        VectorOverlayArgs(uri="parcels.gpkg", other="zones.gpkg", output="out.gpkg", suffixes=["_p", "_z"]), ctx
    )

    columns = set(read(ctx.roots[0] / "out.gpkg").columns)
    assert columns == {"id_p", "name_p", "value", "id_z", "name_z", "kind", "geometry"}


def test_a_second_layer_in_another_crs_is_reprojected_and_said(write: Write, ctx: JobContext) -> None:
    first = write("parcels.gpkg", *parcels())
    geoms, fields = zones()
    second = write("zones.geojson", list(gpd.GeoSeries(geoms, crs=UTM).to_crs("EPSG:4326")), fields, crs="EPSG:4326")

    result = vector_overlay(VectorOverlayArgs(uri="parcels.gpkg", other="zones.geojson", output="out.gpkg"), ctx)

    assert [(r.input, r.from_crs, r.to_crs) for r in result.reprojected] == [("other", "EPSG:4326", UTM)]
    assert "other reprojected from EPSG:4326" in result.summary()
    same_features(read(ctx.roots[0] / "out.gpkg"), expected(first, second, "intersection"))


def test_invalid_geometries_are_refused_with_their_count_or_repaired(write: Write, ctx: JobContext) -> None:
    bowtie = shapely.Polygon([at(0, 0).coords[0], at(100, 100).coords[0], at(100, 0).coords[0], at(0, 100).coords[0]])
    write("bad.gpkg", [bowtie, box(0, 0, 10, 10)])
    write("zones.gpkg", *zones())

    with pytest.raises(JobFailed) as failed:
        vector_overlay(VectorOverlayArgs(uri="bad.gpkg", other="zones.gpkg", output="out.gpkg"), ctx)
    assert (failed.value.code, failed.value.field) == ("geometry.invalid", "uri")
    assert "1 of 2 geometries are invalid" in failed.value.message
    assert not (ctx.roots[0] / "out.gpkg").exists()

    result = vector_overlay(
        VectorOverlayArgs(uri="bad.gpkg", other="zones.gpkg", output="out.gpkg", make_valid=True), ctx
    )
    assert result.repaired == 1
    written = read(ctx.roots[0] / "out.gpkg")
    assert written.is_valid.all()
    repaired = shapely.make_valid(bowtie)
    zone_union = shapely.union_all(zones()[0])
    wanted = repaired.intersection(zone_union).area + box(0, 0, 10, 10).intersection(zone_union).area
    assert written.area.sum() == pytest.approx(wanted, rel=1e-9)


def test_an_overlay_that_leaves_nothing_writes_an_empty_layer(write: Write, ctx: JobContext) -> None:
    write("parcels.gpkg", *parcels())
    write("far.gpkg", [box(10_000, 10_000, 10_100, 10_100)])

    result = vector_overlay(VectorOverlayArgs(uri="parcels.gpkg", other="far.gpkg", output="out.gpkg"), ctx)

    assert result.feature_count == 0 and result.geometry_type is None
    assert len(read(ctx.roots[0] / "out.gpkg")) == 0


def test_keep_geom_type_drops_or_keeps_the_shared_edges(write: Write, ctx: JobContext) -> None:
    write("left.gpkg", [box(0, 0, 10, 10)])
    write("right.gpkg", [box(10, 0, 20, 10), box(5, 5, 15, 15)])

    kept = vector_overlay(VectorOverlayArgs(uri="left.gpkg", other="right.gpkg", output="kept.gpkg"), ctx)
    both = vector_overlay(
        VectorOverlayArgs(uri="left.gpkg", other="right.gpkg", output="all.gpkg", keep_geom_type=False), ctx
    )

    assert kept.feature_count == 1 and kept.geometry_type == "Polygon"
    assert both.feature_count == 2
    assert set(read(ctx.roots[0] / "all.gpkg").geom_type) == {"Polygon", "LineString"}


def test_points_on_a_boundary_are_inside_an_intersection(write: Write, ctx: JobContext) -> None:
    write("points.gpkg", [at(0, 50), at(50, 50), at(500, 500)])
    write("zones.gpkg", [box(0, 0, 100, 100)])

    result = vector_overlay(VectorOverlayArgs(uri="points.gpkg", other="zones.gpkg", output="out.gpkg"), ctx)

    assert result.feature_count == 2 and result.geometry_type == "Point"


def test_a_missing_layer_or_a_bound_names_its_argument(write: Write, ctx: JobContext, tmp_path: Path) -> None:
    write("parcels.gpkg", *parcels())
    write("zones.gpkg", *zones())

    with pytest.raises(JobFailed) as missing:
        vector_overlay(
            VectorOverlayArgs(uri="parcels.gpkg", other="zones.gpkg", other_layer="nope", output="out.gpkg"), ctx
        )
    with pytest.raises(JobFailed) as bound:
        vector_overlay(
            VectorOverlayArgs(uri="parcels.gpkg", other="zones.gpkg", output="out.gpkg"), bounded(tmp_path, features=2)
        )

    assert (missing.value.code, missing.value.field) == ("layer.not_found", "other_layer")
    assert (bound.value.code, bound.value.field) == ("limit.features", "uri")
    assert not (tmp_path / "out.gpkg").exists()


@pytest.mark.parametrize(
    "geoms",
    [[box(0, 0, 10, 10), at(5, 5)], [shapely.GeometryCollection([box(0, 0, 1, 1), at(9, 9)])]],
    ids=["mixed", "collection"],
)
def test_a_layer_mixing_kinds_is_refused_naming_it(
    write: Write, ctx: JobContext, geoms: list[shapely.Geometry]
) -> None:
    write("parcels.gpkg", *parcels())
    write("mixed.gpkg", geoms)

    with pytest.raises(JobFailed) as failed:
        vector_overlay(VectorOverlayArgs(uri="parcels.gpkg", other="mixed.gpkg", output="out.gpkg"), ctx)

    assert (failed.value.code, failed.value.field) == ("geometry.mixed", "other")
    assert not (ctx.roots[0] / "out.gpkg").exists()


@pytest.mark.parametrize("keep_geom_type", [True, False])
def test_an_intersection_of_polygons_is_geopandas_own_feature_for_feature(keep_geom_type: bool) -> None:
    rng = np.random.default_rng(46)
    squares = [shapely.box(x, y, x + 10, y + 10) for x, y in rng.uniform(0, 100, (60, 2)).round()]
    holed = shapely.Polygon([(0, 0), (40, 0), (40, 40), (0, 40)], [[(10, 10), (30, 10), (30, 30), (10, 30)]])
    corner = shapely.union(shapely.box(45, 45, 55, 55), shapely.box(50, 30, 55, 45))  # meets a square on an edge too
    multi = shapely.MultiPolygon([shapely.box(60, 60, 70, 70), shapely.box(80, 0, 90, 10)])
    left = gpd.GeoDataFrame({"a": range(62), "name": [f"l{i}" for i in range(62)]},
                            geometry=[*squares, holed, shapely.box(40, 40, 50, 50)], crs=UTM)  # fmt: skip
    right = gpd.GeoDataFrame({"b": [1.5, 2.5, 3.5], "kind": ["x", "y", "z"]}, geometry=[corner, multi, holed], crs=UTM)
    first, second = overlay.prepared(left, right, ["_1", "_2"])

    fast = overlay._intersection(first, second, keep_geom_type)
    wanted = gpd.overlay(first, second, how="intersection", keep_geom_type=keep_geom_type)

    pd.testing.assert_frame_equal(fast.drop(columns="geometry"), wanted.drop(columns="geometry"))
    assert list(fast.columns) == list(wanted.columns)
    assert (shapely.to_wkb(fast.geometry.values.to_numpy()) == shapely.to_wkb(wanted.geometry.values.to_numpy())).all()
    kinds = set(shapely.get_type_id(shapely.intersection(left.geometry[61], right.geometry[0])).flatten().tolist())
    assert kinds == {shapely.GeometryType.GEOMETRYCOLLECTION}  # the edge-sharing pair the extraction is for
    assert len(wanted) >= 15
