"""The vector tools on awkward layers: clips that touch edges, features without geometry, GML ids, one empty rule."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio
import pyogrio.raw
import pytest
import shapely

from schemas.tools.vector import (
    VectorBufferArgs,
    VectorClipArgs,
    VectorConvertArgs,
    VectorGeometryArgs,
    VectorMeasureArgs,
    VectorReprojectArgs,
    VectorResult,
    VectorSimplifyArgs,
)
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.vector import (
    vector_buffer,
    vector_clip,
    vector_convert,
    vector_geometry,
    vector_measure,
    vector_reproject,
    vector_simplify,
)

VectorFactory = Callable[..., Path]

U_SHAPE = shapely.difference(shapely.box(0, 0, 3, 3), shapely.box(1, 1, 2, 3))
"""A U: a mask over its notch and left arm shares the notch's bottom and right edges with it."""
TWO_PARTS = shapely.MultiPolygon([shapely.box(0, 0, 1, 1), shapely.box(2, 0, 3, 1)])
"""Two squares: a mask over the first one that reaches the second's left edge touches it there."""
WITH_HOLE = shapely.Polygon([(0, 4), (4, 4), (4, 8), (0, 8)], [[(1, 5), (2, 5), (2, 6), (1, 6)]])


def read(path: Path) -> np.ndarray:
    _, _, wkb, _ = pyogrio.raw.read(path)
    return shapely.from_wkb(wkb)


@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:32633"])
@pytest.mark.parametrize("output", ["clip.gpkg", "clip.shp"])
def test_clip_keeps_only_the_polygons_of_a_cut_that_shares_edges_with_the_mask(
    make_vector: VectorFactory, ctx: JobContext, crs: str, output: str
) -> None:
    make_vector("src.gpkg", [U_SHAPE, TWO_PARTS, WITH_HOLE], crs=crs)
    mask = shapely.union(shapely.box(0.5, 1, 2, 3), shapely.box(0, 0, 2, 1))

    result = vector_clip(VectorClipArgs(uri="src.gpkg", output=output, mask=mask.wkt), ctx)

    clipped = read(ctx.roots[0] / output)
    assert set(shapely.get_type_id(clipped).tolist()) <= {3, 6}  # Polygon, MultiPolygon: no collection, no edge
    expected = shapely.intersection([U_SHAPE, TWO_PARTS], mask)
    assert sorted(shapely.area(clipped)) == pytest.approx(sorted(shapely.area(expected)))
    assert (result.feature_count, result.source_feature_count, result.geometry_type) == (2, 3, "Polygon")


def test_clip_keeps_lines_and_points_to_their_own_dimension(make_vector: VectorFactory, ctx: JobContext) -> None:
    crossing = [shapely.LineString([(0, 0), (4, 4)]), shapely.LineString([(0, 4), (4, 0)])]
    make_vector("lines.gpkg", crossing)
    make_vector("pts.gpkg", [shapely.Point(2, 2), shapely.Point(1, 1), shapely.Point(9, 9)])  # one on the edge
    mask = "POLYGON((1 1, 3 1, 3 3, 1 3, 1 1))"

    lines = vector_clip(VectorClipArgs(uri="lines.gpkg", output="l.gpkg", mask=mask), ctx)
    points = vector_clip(VectorClipArgs(uri="pts.gpkg", output="p.gpkg", mask=mask), ctx)

    assert shapely.equals(read(ctx.roots[0] / "l.gpkg"), shapely.intersection(crossing, shapely.from_wkt(mask))).all()
    assert (lines.geometry_type, points.geometry_type, points.feature_count) == ("LineString", "Point", 2)


def test_buffer_to_flatgeobuf_drops_and_counts_a_feature_without_geometry(
    make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_vector("src.gpkg", [shapely.Point(500_000, 0), None, shapely.Point(501_000, 0)], crs="EPSG:32633")

    result = vector_buffer(VectorBufferArgs(uri="src.gpkg", output="buf.fgb", distance=10), ctx)

    assert (result.feature_count, result.empty_dropped) == (2, 1)
    assert pyogrio.read_info(ctx.roots[0] / "buf.fgb")["features"] == 2
    assert "1 without geometry dropped" in result.summary()


GML = """<?xml version="1.0" encoding="utf-8" ?>
<ogr:FeatureCollection xmlns:gml="http://www.opengis.net/gml" xmlns:ogr="http://ogr.maptools.org/">
{}
</ogr:FeatureCollection>
"""
MEMBER = """<gml:featureMember><ogr:roads fid="roads.{i}">
<ogr:geometryProperty><gml:Point srsName="EPSG:4326"><gml:coordinates>{i},49</gml:coordinates></gml:Point>
</ogr:geometryProperty><ogr:name>r{i}</ogr:name></ogr:roads></gml:featureMember>"""


def test_gml_to_geopackage_renames_the_text_fid_and_says_so(ctx: JobContext) -> None:
    (ctx.roots[0] / "roads.gml").write_text(GML.format("\n".join(MEMBER.format(i=i) for i in range(3))))

    result = vector_convert(VectorConvertArgs(uri="roads.gml", output="roads.gpkg"), ctx)

    written = pyogrio.read_dataframe(ctx.roots[0] / "roads.gpkg")
    assert written["source_fid"].tolist() == ["roads.0", "roads.1", "roads.2"]
    assert written["name"].tolist() == ["r0", "r1", "r2"]
    assert result.renamed_fields == {"fid": "source_fid"}
    assert "fid → source_fid" in result.summary()


def test_an_integer_fid_is_the_geopackage_feature_id_and_is_not_renamed(ctx: JobContext) -> None:
    wkb = np.array(shapely.to_wkb([shapely.Point(0, 0), shapely.Point(1, 1)]), dtype=object)
    path = ctx.roots[0] / "src.geojson"
    pyogrio.raw.write(path, wkb, [np.array([7, 9])], ["fid"], driver="GeoJSON", geometry_type="Point", crs="EPSG:4326")

    result = vector_convert(VectorConvertArgs(uri="src.geojson", output="out.gpkg"), ctx)

    assert result.renamed_fields == {}
    assert result.feature_count == 2


# --- one rule: no feature is written without a geometry, and those left out are counted ----------------------

SHAPES = [shapely.box(0, 0, 1, 1), None, shapely.Polygon(), WITH_HOLE]


def runs(ctx: JobContext, src: str = "src.gpkg") -> dict[str, Callable[[], VectorResult]]:
    return {
        "convert": lambda: vector_convert(VectorConvertArgs(uri=src, output="o.fgb"), ctx),
        "reproject": lambda: vector_reproject(
            VectorReprojectArgs(uri=src, output="o.fgb", dst_crs="EPSG:3857", src_crs="EPSG:32633"), ctx
        ),
        "clip": lambda: vector_clip(VectorClipArgs(uri=src, output="o.fgb", bounds=[-1, -1, 9, 9]), ctx),
        "buffer": lambda: vector_buffer(VectorBufferArgs(uri=src, output="o.fgb", distance=0.1), ctx),
        "simplify": lambda: vector_simplify(VectorSimplifyArgs(uri=src, output="o.fgb", tolerance=0.1), ctx),
        "snap": lambda: vector_simplify(VectorSimplifyArgs(uri=src, output="o.fgb", grid_size=0.5), ctx),
        "geometry": lambda: vector_geometry(VectorGeometryArgs(uri=src, output="o.fgb", operation="centroid"), ctx),
        "measure": lambda: vector_measure(VectorMeasureArgs(uri=src, output="o.fgb"), ctx),
    }


@pytest.mark.parametrize("tool", ["convert", "reproject", "clip", "buffer", "simplify", "snap", "geometry", "measure"])
def test_every_vector_tool_drops_and_counts_missing_and_empty_geometries(
    make_vector: VectorFactory, ctx: JobContext, tool: str
) -> None:
    make_vector("src.gpkg", SHAPES, crs="EPSG:32633")

    result = runs(ctx)[tool]()

    written = read(ctx.roots[0] / "o.fgb")
    assert (result.feature_count, result.empty_dropped, len(written)) == (2, 2, 2)
    assert not (shapely.is_missing(written) | shapely.is_empty(written)).any()
    _, _, _, columns = pyogrio.raw.read(ctx.roots[0] / "o.fgb")
    assert sorted(columns[1].tolist()) == ["f0", "f3"]  # the attributes stay with their geometries


def test_a_geometry_the_operation_empties_is_dropped_and_counted(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg", [shapely.box(0, 0, 1, 1), shapely.box(0, 0, 10, 10)], crs="EPSG:32633")

    result = vector_buffer(VectorBufferArgs(uri="src.gpkg", output="o.gpkg", distance=-1), ctx)

    assert (result.feature_count, result.empty_dropped) == (1, 1)
    assert shapely.area(read(ctx.roots[0] / "o.gpkg")) == pytest.approx([64.0])


def test_an_empty_result_is_an_empty_layer(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg")

    result = vector_clip(VectorClipArgs(uri="src.gpkg", output="o.gpkg", bounds=[0, 0, 1, 1]), ctx)

    assert (result.feature_count, result.empty_dropped, result.geometry_type) == (0, 0, None)
    assert pyogrio.read_info(ctx.roots[0] / "o.gpkg")["features"] == 0


def test_a_table_without_a_geometry_column_keeps_its_rows(ctx: JobContext) -> None:
    (ctx.roots[0] / "table.csv").write_text("name,value\na,1\nb,2\n")

    result = vector_convert(VectorConvertArgs(uri="table.csv", output="table.gpkg"), ctx)

    assert (result.feature_count, result.empty_dropped) == (2, 0)
    assert pyogrio.read_dataframe(ctx.roots[0] / "table.gpkg")["name"].tolist() == ["a", "b"]


@pytest.mark.parametrize("tool", ["reproject", "clip", "buffer", "simplify", "geometry", "measure"])
def test_a_geometry_operation_on_a_table_fails_naming_uri(ctx: JobContext, tool: str) -> None:
    (ctx.roots[0] / "src.csv").write_text("name,value\na,1\n")

    with pytest.raises(JobFailed) as failed:
        runs(ctx, "src.csv")[tool]()

    assert (failed.value.code, failed.value.field) == ("layer.no_geometry", "uri")
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["src.csv"]
