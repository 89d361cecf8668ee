"""vector_geometry (centroids, representative points, hulls, envelopes, repairs) and vector_measure (geodesic area,
length, perimeter) against shapely and pyproj.Geod on reference layers."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio
import pyogrio.raw
import pytest
import shapely
from pydantic import ValidationError
from pyproj import Geod, Transformer
from shapely.affinity import scale, translate
from shapely.geometry.polygon import orient

from schemas.tools.vector import VectorGeometryArgs, VectorMeasureArgs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools.vector import vector_geometry, vector_measure

VectorFactory = Callable[..., Path]
WGS84 = Geod(ellps="WGS84")

WITH_HOLE = shapely.Polygon([(0, 0), (20, 0), (20, 20), (0, 20)], [[(5, 5), (15, 5), (15, 15), (5, 15)]])
TWO_PARTS = shapely.MultiPolygon([shapely.box(30, 0, 40, 10), shapely.box(50, 0, 52, 30)])
CROSSING = shapely.MultiLineString([[(0, 0), (10, 10)], [(0, 10), (10, 0)]])
L_SHAPE = shapely.Polygon([(0, 0), (10, 0), (10, 1), (1, 1), (1, 10), (0, 10)])  # its centroid lies outside it
LAYER = [WITH_HOLE, TWO_PARTS, CROSSING, L_SHAPE, shapely.Point(3, 4)]


def read(path: Path) -> tuple[np.ndarray, list[np.ndarray]]:
    _, _, wkb, columns = pyogrio.raw.read(path)
    return shapely.from_wkb(wkb), columns


@pytest.mark.parametrize(
    ("operation", "expected"),
    [
        ("centroid", shapely.centroid),
        ("representative_point", shapely.point_on_surface),
        ("convex_hull", shapely.convex_hull),
        ("envelope", shapely.envelope),
    ],
)
def test_derived_geometries_are_those_of_geos_with_the_attributes(
    make_vector: VectorFactory, ctx: JobContext, operation: str, expected: Callable
) -> None:
    make_vector("src.gpkg", LAYER, crs="EPSG:32633")

    result = vector_geometry(VectorGeometryArgs(uri="src.gpkg", output="out.gpkg", operation=operation), ctx)

    geometry, columns = read(ctx.roots[0] / "out.gpkg")
    assert shapely.equals_exact(shapely.normalize(geometry), shapely.normalize(expected(LAYER)), 1e-9).all()
    assert columns[1].tolist() == ["f0", "f1", "f2", "f3", "f4"]
    assert (result.operation, result.feature_count) == (operation, 5)


def test_a_representative_point_lies_inside_where_the_centroid_does_not(
    make_vector: VectorFactory, ctx: JobContext
) -> None:
    make_vector("src.gpkg", [L_SHAPE, WITH_HOLE], crs="EPSG:32633")

    vector_geometry(VectorGeometryArgs(uri="src.gpkg", output="p.gpkg", operation="representative_point"), ctx)

    points, _ = read(ctx.roots[0] / "p.gpkg")
    assert shapely.within(points, [L_SHAPE, WITH_HOLE]).all()
    assert not shapely.within(shapely.centroid([L_SHAPE, WITH_HOLE]), [L_SHAPE, WITH_HOLE]).any()


def test_make_valid_repairs_invalid_rings_keeping_polygons(make_vector: VectorFactory, ctx: JobContext) -> None:
    bowtie = shapely.from_wkt("POLYGON((0 0, 10 10, 10 0, 0 10, 0 0))")
    spike = shapely.from_wkt("POLYGON((0 0, 10 0, 10 10, 5 10, 5 15, 5 10, 0 10, 0 0))")  # a collapsed spike
    make_vector("src.gpkg", [bowtie, spike, WITH_HOLE], crs="EPSG:32633")

    result = vector_geometry(VectorGeometryArgs(uri="src.gpkg", output="v.gpkg", operation="make_valid"), ctx)

    geometry, _ = read(ctx.roots[0] / "v.gpkg")
    assert shapely.is_valid(geometry).all()
    assert set(shapely.get_type_id(geometry).tolist()) <= {3, 6}  # the spike's line is not kept
    assert shapely.area(geometry) == pytest.approx(shapely.area(shapely.make_valid([bowtie, spike, WITH_HOLE])))
    assert result.repaired == 2


def test_vector_geometry_refuses_an_unknown_operation() -> None:
    with pytest.raises(ValidationError) as invalid:
        VectorGeometryArgs(uri="a.gpkg", output="b.gpkg", operation="buffer")

    assert invalid.value.errors()[0]["loc"] == ("operation",)


# --- vector_measure -------------------------------------------------------------------------------------------


def test_geographic_measures_are_those_of_the_ellipsoid(make_vector: VectorFactory, ctx: JobContext) -> None:
    cell = shapely.box(0, 0, 1, 1)
    holed = shapely.Polygon(shapely.box(10, 60, 11, 61).exterior, [shapely.box(10.2, 60.2, 10.4, 60.4).exterior])
    road = shapely.LineString([(24.0, 60.0), (24.5, 60.3), (25.0, 60.1)])
    make_vector("src.gpkg", [cell, holed, road, shapely.Point(5, 5)])

    result = vector_measure(VectorMeasureArgs(uri="src.gpkg", output="m.gpkg"), ctx)

    table = pyogrio.read_dataframe(ctx.roots[0] / "m.gpkg")
    areas = [abs(WGS84.geometry_area_perimeter(orient(g))[0]) for g in (cell, holed)]  # Geod wants holes clockwise
    assert table["area_m2"].tolist() == pytest.approx([*areas, 0, 0], rel=1e-9)
    assert table["area_m2"][0] == pytest.approx(12_308_778_361, rel=1e-6)  # a 1° cell on the equator
    assert table["length_m"].tolist() == pytest.approx([0, 0, WGS84.geometry_length(road), 0], rel=1e-9)
    perimeters = [sum(WGS84.geometry_length(ring) for ring in (g.exterior, *g.interiors)) for g in (cell, holed)]
    assert table["perimeter_m"].tolist() == pytest.approx([*perimeters, 0, 0], rel=1e-9)  # holes' rings included
    assert result.total_area_m2 == pytest.approx(sum(areas))
    assert result.fields_added == ["area_m2", "length_m", "perimeter_m"]


def test_projected_measures_are_geodesic_not_planar(make_vector: VectorFactory, ctx: JobContext) -> None:
    kilometres = [scale(g, 100, 100, origin=(0, 0)) for g in (WITH_HOLE, TWO_PARTS)]  # 2 km with a 1 km hole; 5 km
    shapes = [translate(kilometres[0], 600_000, 6_650_000), translate(kilometres[1], 300_000, 6_000_000)]
    make_vector("src.gpkg", shapes, crs="EPSG:32633")
    to_lonlat = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True)

    vector_measure(VectorMeasureArgs(uri="src.gpkg", output="m.gpkg"), ctx)

    table = pyogrio.read_dataframe(ctx.roots[0] / "m.gpkg")
    lonlat = shapely.transform(shapes, lambda xy: np.column_stack(to_lonlat.transform(*xy.T)))
    expected = [abs(WGS84.geometry_area_perimeter(shapely.normalize(g))[0]) for g in lonlat]
    assert table["area_m2"].tolist() == pytest.approx(expected, rel=1e-9)
    assert table["area_m2"].tolist() != pytest.approx(shapely.area(shapes).tolist(), rel=1e-4)  # UTM's scale


def test_an_existing_measure_field_is_replaced(ctx: JobContext) -> None:
    wkb = np.array(shapely.to_wkb([shapely.box(0, 0, 1, 1)]), dtype=object)
    path = ctx.roots[0] / "src.gpkg"
    pyogrio.raw.write(path, wkb, [np.array([-1.0])], ["area_m2"], geometry_type="Polygon", crs="EPSG:4326")

    vector_measure(VectorMeasureArgs(uri="src.gpkg", output="m.gpkg"), ctx)

    table = pyogrio.read_dataframe(ctx.roots[0] / "m.gpkg")
    assert list(table.columns) == ["area_m2", "length_m", "perimeter_m", "geometry"]
    assert table["area_m2"][0] == pytest.approx(12_308_778_361, rel=1e-6)


def test_measuring_a_layer_without_a_crs_fails_naming_uri(ctx: JobContext) -> None:
    wkb = np.array(shapely.to_wkb([shapely.box(0, 0, 1, 1)]), dtype=object)
    with pytest.warns(UserWarning, match="crs"):
        pyogrio.raw.write(ctx.roots[0] / "src.gpkg", wkb, [], [], geometry_type="Polygon", crs=None)

    with pytest.raises(JobFailed) as failed:
        vector_measure(VectorMeasureArgs(uri="src.gpkg", output="m.gpkg"), ctx)

    assert (failed.value.code, failed.value.field) == ("crs.missing", "uri")
