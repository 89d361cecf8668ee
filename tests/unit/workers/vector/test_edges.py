"""What every analysis tool shares: nothing left behind when cancelled, features without geometry written to any
format, lines overlaid, distances on geographic layers flagged."""

import math
from collections.abc import Callable
from pathlib import Path

import geopandas as gpd
import numpy as np
import pyogrio
import pyproj
import pytest
import shapely

from schemas.tools.overlay import VectorDissolveArgs, VectorJoinArgs, VectorOverlayArgs
from tests.unit.workers.vector.conftest import UTM, Write, at, box, parcels, read, zones
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled
from workers.tools.overlay import vector_dissolve, vector_join, vector_overlay
from workers.vector.layers import read_frame

RUNS: dict[str, Callable[[str, JobContext], object]] = {
    "overlay": lambda out, ctx: vector_overlay(
        VectorOverlayArgs(uri="parcels.gpkg", other="zones.gpkg", output=out), ctx
    ),
    "dissolve": lambda out, ctx: vector_dissolve(VectorDissolveArgs(uri="parcels.gpkg", output=out), ctx),
    "join": lambda out, ctx: vector_join(VectorJoinArgs(uri="parcels.gpkg", other="zones.gpkg", output=out), ctx),
}


@pytest.mark.parametrize("tool", RUNS)
def test_cancelled_at_the_last_report_leaves_the_workspace_as_it_was(write: Write, tmp_path: Path, tool: str) -> None:
    write("parcels.gpkg", *parcels())
    write("zones.gpkg", *zones())
    reports: list[float] = []
    RUNS[tool]("counted.gpkg", JobContext(call_id="n", roots=[tmp_path], sink=lambda p, t, m: bool(reports.append(p))))
    (tmp_path / "counted.gpkg").unlink()
    before, seen = sorted(p.name for p in tmp_path.iterdir()), []
    last = lambda p, t, m: bool(seen.append(p)) or len(seen) == len(reports)  # noqa: E731

    with pytest.raises(JobCancelled):
        RUNS[tool]("out.gpkg", JobContext(call_id="c", roots=[tmp_path], sink=last))

    assert len(seen) == len(reports) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("output", ["out.fgb", "out.shp", "out.geojson"])
def test_features_without_geometry_are_left_out_and_counted(write: Write, ctx: JobContext, output: str) -> None:
    write("points.gpkg", [at(0, 0), None, at(5, 5)], {"id": [1, 2, 3]})
    write("zones.gpkg", [box(-1, -1, 1, 1)], {"zone": ["a"]})

    joined = vector_join(VectorJoinArgs(uri="points.gpkg", other="zones.gpkg", output=output, how="left"), ctx)
    dissolved = vector_dissolve(VectorDissolveArgs(uri="points.gpkg", output="d_" + output, by=["id"]), ctx)

    assert (joined.feature_count, joined.matched, joined.empty_dropped) == (2, 1, 1)
    assert (dissolved.feature_count, dissolved.empty_dropped) == (2, 1)
    assert "1 without geometry dropped" in joined.summary()
    written = read(ctx.roots[0] / output).sort_values("id")
    assert written["id"].tolist() == [1, 3] and written["zone"].tolist()[0] == "a"
    assert not written.geometry.isna().any()


def test_a_text_fid_is_written_to_a_geopackage_as_source_fid(write: Write, ctx: JobContext) -> None:
    write("parts.geojson", [box(0, 0, 1, 1), box(1, 0, 2, 1)], {"fid": ["a.1", "a.2"]})
    write("zones.gpkg", [box(-1, -1, 5, 5)], {"zone": ["a"]})

    result = vector_join(VectorJoinArgs(uri="parts.geojson", other="zones.gpkg", output="out.gpkg"), ctx)

    assert (result.feature_count, result.renamed_fields) == (2, {"fid": "source_fid"})
    assert read(ctx.roots[0] / "out.gpkg")["source_fid"].tolist() == ["a.1", "a.2"]


def test_crossing_lines_are_cut_by_polygons_as_geopandas_cuts_them(write: Write, ctx: JobContext) -> None:
    lines = [
        shapely.LineString([at(0, 50).coords[0], at(400, 50).coords[0]]),
        shapely.LineString([at(150, -50).coords[0], at(150, 200).coords[0]]),
    ]
    first = write("lines.gpkg", lines, {"road": ["east", "north"]})
    second = write("zones.gpkg", *zones())

    for how in ("intersection", "difference", "identity"):
        result = vector_overlay(
            VectorOverlayArgs(uri="lines.gpkg", other="zones.gpkg", output=f"{how}.gpkg", how=how),  # type: ignore[arg-type]
            ctx,
        )
        wanted = gpd.overlay(read(first), read(second).rename(columns={"id": "id"}), how=how, keep_geom_type=True)
        written = read(ctx.roots[0] / f"{how}.gpkg")
        assert result.feature_count == len(wanted)
        assert written.length.sum() == pytest.approx(wanted.length.sum(), rel=1e-9)
        assert set(written.geom_type) <= {"LineString", "MultiLineString"}


@pytest.mark.parametrize("lat", [0.0, 45.0, 70.0])
def test_distances_on_a_geographic_layer_are_geodesic_metres(write: Write, ctx: JobContext, lat: float) -> None:
    rng = np.random.default_rng(int(lat))
    lon = rng.uniform(10, 10.05, 40)
    lats = lat + rng.uniform(-0.02, 0.02, 40)
    write("a.gpkg", list(shapely.points(lon[:20], lats[:20])), {"i": list(range(20))}, crs="EPSG:4326")
    write("b.gpkg", list(shapely.points(lon[20:], lats[20:])), {"j": list(range(20))}, crs="EPSG:4326")
    geod = pyproj.Geod(ellps="WGS84")
    lon_a, lon_b = np.meshgrid(lon[:20], lon[20:], indexing="ij")
    lat_a, lat_b = np.meshgrid(lats[:20], lats[20:], indexing="ij")
    metres = geod.inv(lon_a, lat_a, lon_b, lat_b)[2]

    within = vector_join(VectorJoinArgs(uri="a.gpkg", other="b.gpkg", output="w.gpkg", predicate="dwithin",
                                        distance=1500.0), ctx)  # fmt: skip
    near = vector_join(VectorJoinArgs(uri="a.gpkg", other="b.gpkg", output="n.gpkg", mode="nearest", k=2), ctx)

    got = read(ctx.roots[0] / "w.gpkg")
    assert sorted(zip(got["i"], got["j"], strict=True)) == sorted(zip(*np.nonzero(metres <= 1500.0), strict=True))
    assert within.warnings == [] and near.warnings == []
    pairs = read(ctx.roots[0] / "n.gpkg")
    wanted = np.sort(metres, axis=1)[:, :2].ravel()
    assert pairs["distance"].to_numpy() == pytest.approx(wanted, rel=1e-9)


def test_a_distance_to_polygons_on_a_geographic_layer_is_metres(write: Write, ctx: JobContext) -> None:
    places = gpd.GeoSeries([at(0, 0), at(2_000, 500), at(-800, 3_000)], crs=UTM)
    zones = gpd.GeoSeries([box(300, -200, 900, 400), box(-2_000, 2_000, -1_500, 2_600)], crs=UTM)
    write("places.gpkg", list(places.to_crs("EPSG:4326")), {"i": [0, 1, 2]}, crs="EPSG:4326")
    write("zones.gpkg", list(zones.to_crs("EPSG:4326")), {"z": [0, 1]}, crs="EPSG:4326")

    vector_join(VectorJoinArgs(uri="places.gpkg", other="zones.gpkg", output="n.gpkg", mode="nearest"), ctx)

    got = read(ctx.roots[0] / "n.gpkg")
    wanted = [min(p.distance(z) for z in zones) for p in places]
    assert got["distance"].to_numpy() == pytest.approx(wanted, rel=1e-3)


def test_a_distance_on_a_layer_in_feet_is_metres(write: Write, ctx: JobContext) -> None:
    feet = "EPSG:2263"  # New York Long Island, US survey feet
    a = gpd.GeoSeries([shapely.Point(1_000_000, 200_000)], crs=feet)
    b = gpd.GeoSeries([shapely.Point(1_000_000 + 3_000, 200_000)], crs=feet)  # 3,000 ft: 914.4 m
    write("a.gpkg", list(a), {"i": [0]}, crs=feet)
    write("b.gpkg", list(b), {"j": [0]}, crs=feet)

    near = vector_join(VectorJoinArgs(uri="a.gpkg", other="b.gpkg", output="n.gpkg", predicate="dwithin",
                                      distance=915.0), ctx)  # fmt: skip
    far = vector_join(VectorJoinArgs(uri="a.gpkg", other="b.gpkg", output="f.gpkg", predicate="dwithin",
                                     distance=914.0), ctx)  # fmt: skip

    assert (near.feature_count, far.feature_count) == (1, 0)


def test_a_flatgeobuf_input_with_features_without_geometry_is_read(write: Write, ctx: JobContext) -> None:
    frame = gpd.GeoDataFrame({"id": [1, 2]}, geometry=[at(0, 0), None], crs=UTM)
    frame.to_file(ctx.roots[0] / "points.fgb", SPATIAL_INDEX="NO")
    write("zones.gpkg", [box(-1, -1, 1, 1)], {"zone": ["a"]})

    result = vector_join(VectorJoinArgs(uri="points.fgb", other="zones.gpkg", output="out.gpkg", how="left"), ctx)

    assert (result.feature_count, result.matched, result.input_feature_counts) == (1, 1, [2, 1])
    assert result.empty_dropped == 1


def test_a_layer_without_crs_is_taken_in_the_other_ones_and_said(write: Write, ctx: JobContext) -> None:
    write("plain.gpkg", [box(0, 0, 100, 100)], {"id": [1]}, crs=None)
    write("zones.gpkg", *zones())

    result = vector_overlay(VectorOverlayArgs(uri="zones.gpkg", other="plain.gpkg", output="out.gpkg"), ctx)

    assert result.crs == UTM and result.reprojected == []
    assert result.warnings == ["other has no CRS: its coordinates are taken as the other layer's"]
    assert read(ctx.roots[0] / "out.gpkg").area.sum() == pytest.approx(50 * 70)


@pytest.mark.parametrize("name", ["plain", 'we"ird; DROP TABLE x; --'])
def test_a_geopackage_read_by_box_through_its_rtree_takes_the_features_gdal_takes(ctx: JobContext, name: str) -> None:
    rng = np.random.default_rng(3)
    frame = gpd.GeoDataFrame({"i": range(500)}, geometry=shapely.points(rng.uniform(0, 100, (500, 2))), crs=UTM)
    path = ctx.roots[0] / "pts.gpkg"
    pyogrio.write_dataframe(frame, path, layer=name)
    box = (10.0, 20.0, 55.5, 70.0)

    got = read_frame(path, name, "uri", box)
    wanted = pyogrio.read_dataframe(path, layer=name, bbox=box, fid_as_index=True)

    assert sorted(got.index) == sorted(wanted.index) and 0 < len(got) < 500
    assert len(read_frame(path, name, "uri", (10.0, -math.inf, math.inf, 70.0))) == int(
        ((frame.geometry.x >= 10) & (frame.geometry.y <= 70)).sum()
    )
