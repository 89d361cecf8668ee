"""What every analysis tool shares: nothing left behind when cancelled, features without geometry written to any
format, lines overlaid, distances on geographic layers flagged."""

from collections.abc import Callable
from pathlib import Path

import geopandas as gpd
import pytest
import shapely

from schemas.tools.overlay import VectorDissolveArgs, VectorJoinArgs, VectorOverlayArgs
from tests.unit.workers.vector.conftest import UTM, Write, at, box, parcels, read, zones
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled
from workers.tools.overlay import vector_dissolve, vector_join, vector_overlay

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


def test_a_distance_on_a_geographic_layer_is_flagged(write: Write, ctx: JobContext) -> None:
    geoms = list(gpd.GeoSeries([at(0, 0), at(10, 10)], crs=UTM).to_crs("EPSG:4326"))
    write("points.geojson", geoms, {"id": [1, 2]}, crs="EPSG:4326")
    write("more.geojson", geoms[:1], {"n": [7]}, crs="EPSG:4326")

    result = vector_join(
        VectorJoinArgs(uri="points.geojson", other="more.geojson", output="out.gpkg", mode="nearest", distance=0.001),
        ctx,
    )

    assert result.feature_count == 2 and result.crs == "EPSG:4326"
    assert any("degrees" in w for w in result.warnings)


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
