"""vector_buffer in metres on any CRS, its caps, joins and dissolve; vector_simplify's snap to a grid."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import shapely
from pydantic import ValidationError
from pyproj import Geod, Transformer

from schemas.tools.vector import VectorBufferArgs, VectorSimplifyArgs
from workers.jobkit.context import JobContext
from workers.tools.vector import vector_buffer, vector_simplify

VectorFactory = Callable[..., Path]
WGS84 = Geod(ellps="WGS84")


def read(path: Path) -> np.ndarray:
    _, _, wkb, _ = pyogrio.raw.read(path)
    return shapely.from_wkb(wkb)


def geodesic_area(geometry: shapely.Geometry) -> float:
    return abs(WGS84.geometry_area_perimeter(geometry)[0])


@pytest.mark.parametrize("lat", [0.0, 60.0, 79.5])
def test_a_metre_buffer_on_a_geographic_layer_has_the_geodesic_area(
    make_vector: VectorFactory, ctx: JobContext, lat: float
) -> None:
    make_vector("pts.gpkg", [shapely.Point(10.3, lat), shapely.Point(-120.0, -lat)])

    result = vector_buffer(VectorBufferArgs(uri="pts.gpkg", output="buf.gpkg", distance=500), ctx)

    areas = [geodesic_area(g) for g in read(ctx.roots[0] / "buf.gpkg")]
    assert areas == pytest.approx([np.pi * 500**2] * 2, rel=0.01)
    assert (result.units, result.warnings) == ("metres", [])


def test_a_metre_buffer_across_the_antimeridian_stays_in_one_piece(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("pts.gpkg", [shapely.Point(179.9995, 10.0), shapely.Point(-179.9998, -10.0)])

    vector_buffer(VectorBufferArgs(uri="pts.gpkg", output="buf.gpkg", distance=500), ctx)

    buffers = read(ctx.roots[0] / "buf.gpkg")
    assert [geodesic_area(g) for g in buffers] == pytest.approx([np.pi * 500**2] * 2, rel=0.01)
    assert (shapely.bounds(buffers)[:, 2] - shapely.bounds(buffers)[:, 0] < 0.02).all()  # not round the globe


def test_a_metre_buffer_of_a_line_is_500_m_from_it_geodesically(make_vector: VectorFactory, ctx: JobContext) -> None:
    line = shapely.LineString([(24.0, 60.0), (24.05, 60.02), (24.1, 60.0)])
    make_vector("line.gpkg", [line])

    vector_buffer(VectorBufferArgs(uri="line.gpkg", output="buf.gpkg", distance=500, cap_style="flat"), ctx)

    ring = shapely.get_coordinates(shapely.get_exterior_ring(read(ctx.roots[0] / "buf.gpkg")[0]))
    (x0, y0), (x1, y1), (x2, y2) = line.coords
    along = np.array([*WGS84.npts(x0, y0, x1, y1, 2000), (x1, y1), *WGS84.npts(x1, y1, x2, y2, 2000)])
    lon, lat = np.repeat(ring, len(along), axis=0).T
    _, _, metres = WGS84.inv(lon, lat, *np.tile(along, (len(ring), 1)).T)
    nearest = metres.reshape(len(ring), len(along)).min(axis=1)
    assert nearest == pytest.approx(np.full(len(ring), 500.0), rel=0.005)


def test_metres_on_a_projected_crs_in_feet_are_scaled(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("pts.gpkg", [shapely.Point(1_000_000, 200_000)], crs="EPSG:2263")  # New York, US survey feet

    result = vector_buffer(VectorBufferArgs(uri="pts.gpkg", output="buf.gpkg", distance=100), ctx)

    feet = 100 / 0.3048006096012192
    assert shapely.area(read(ctx.roots[0] / "buf.gpkg")) == pytest.approx([shapely.Point(0, 0).buffer(feet).area])
    assert result.units == "metres"


def test_crs_units_on_a_geographic_layer_are_degrees_and_say_so(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("pts.gpkg", [shapely.Point(10, 49)])

    result = vector_buffer(VectorBufferArgs(uri="pts.gpkg", output="b.gpkg", distance=0.5, units="crs"), ctx)

    assert shapely.area(read(ctx.roots[0] / "b.gpkg")) == pytest.approx([shapely.Point(0, 0).buffer(0.5).area])
    assert result.units == "degree"
    assert "geographic" in result.warnings[0]


CROSSING = [shapely.LineString([(0, 0), (10, 10)]), shapely.LineString([(0, 10), (10, 0)])]
BENT = shapely.LineString([(0, 0), (10, 0), (10, 10)])
WITH_HOLE = shapely.Polygon([(0, 0), (20, 0), (20, 20), (0, 20)], [[(5, 5), (15, 5), (15, 15), (5, 15)]])


@pytest.mark.parametrize(
    "style",
    [
        {"cap_style": "flat"},
        {"cap_style": "square"},
        {"join_style": "mitre", "mitre_limit": 2.0},
        {"join_style": "mitre", "mitre_limit": 1.1},
        {"join_style": "bevel", "cap_style": "flat"},
    ],
)
def test_caps_and_joins_are_those_of_geos(make_vector: VectorFactory, ctx: JobContext, style: dict) -> None:
    make_vector("lines.gpkg", [BENT, *CROSSING], crs="EPSG:32633")

    vector_buffer(VectorBufferArgs(uri="lines.gpkg", output="b.gpkg", distance=2, **style), ctx)

    expected = shapely.buffer([BENT, *CROSSING], 2, quad_segs=16, **style)
    written = read(ctx.roots[0] / "b.gpkg")
    assert shapely.area(shapely.symmetric_difference(written, expected)) == pytest.approx([0, 0, 0], abs=1e-6)


def test_a_negative_buffer_of_a_polygon_with_a_hole_widens_it(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("poly.gpkg", [WITH_HOLE], crs="EPSG:32633")

    vector_buffer(VectorBufferArgs(uri="poly.gpkg", output="b.gpkg", distance=-1, join_style="mitre"), ctx)

    assert shapely.area(read(ctx.roots[0] / "b.gpkg")) == pytest.approx([18 * 18 - 12 * 12])


def test_dissolve_merges_every_buffer_into_one_feature(make_vector: VectorFactory, ctx: JobContext) -> None:
    points = [shapely.Point(500_000, 0), shapely.Point(500_150, 0), shapely.Point(510_000, 0)]
    make_vector("pts.gpkg", points, crs="EPSG:32633")

    result = vector_buffer(VectorBufferArgs(uri="pts.gpkg", output="b.gpkg", distance=100, dissolve=True), ctx)

    written = read(ctx.roots[0] / "b.gpkg")
    expected = shapely.union_all(shapely.buffer(points, 100, quad_segs=16))
    assert (result.feature_count, result.dissolved, result.geometry_type) == (1, True, "MultiPolygon")
    assert shapely.area(written[0]) == pytest.approx(expected.area)
    assert pyogrio.read_info(ctx.roots[0] / "b.gpkg")["fields"].tolist() == []


def test_dissolving_buffers_that_all_vanish_writes_an_empty_layer(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("pts.gpkg", [shapely.Point(500_000, 0), None], crs="EPSG:32633")

    args = VectorBufferArgs(uri="pts.gpkg", output="b.gpkg", distance=-5, dissolve=True)
    result = vector_buffer(args, ctx)

    assert (result.feature_count, result.empty_dropped) == (0, 2)


def test_dissolve_in_metres_on_a_geographic_layer(make_vector: VectorFactory, ctx: JobContext) -> None:
    to_utm = Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True)
    points = [shapely.Point(*to_utm.transform(500_000 + dx, 5_400_000)) for dx in (0, 300)]
    make_vector("pts.gpkg", points)

    vector_buffer(VectorBufferArgs(uri="pts.gpkg", output="b.gpkg", distance=200, dissolve=True), ctx)

    expected = shapely.union_all(shapely.buffer([shapely.Point(0, 0), shapely.Point(300, 0)], 200, quad_segs=16))
    assert geodesic_area(read(ctx.roots[0] / "b.gpkg")[0]) == pytest.approx(expected.area, rel=0.005)


def test_buffer_refuses_an_unknown_cap_style() -> None:
    with pytest.raises(ValidationError) as invalid:
        VectorBufferArgs(uri="a.gpkg", output="b.gpkg", distance=1, cap_style="butt")

    assert invalid.value.errors()[0]["loc"] == ("cap_style",)


# --- vector_simplify: snap to a grid ---------------------------------------------------------------------------

SHAPES = [
    shapely.Polygon([(0.1, 0.2), (10.3, 0.4), (10.2, 9.7), (0.4, 10.1)], [[(3.2, 3.3), (6.1, 3.4), (6.2, 6.4)]]),
    shapely.MultiPolygon([shapely.box(20.2, 0.1, 24.9, 4.8), shapely.box(30.3, 0.3, 30.6, 0.6)]),
    shapely.LineString([(0.26, 0.74), (5.51, 5.49), (9.9, 0.1)]),
]


def test_snap_to_grid_puts_every_vertex_on_the_grid_as_geos_does(make_vector: VectorFactory, ctx: JobContext) -> None:
    make_vector("src.gpkg", SHAPES, crs="EPSG:32633")

    result = vector_simplify(VectorSimplifyArgs(uri="src.gpkg", output="s.gpkg", grid_size=0.5), ctx)

    written = read(ctx.roots[0] / "s.gpkg")
    coords = shapely.get_coordinates(written)
    np.testing.assert_allclose(coords * 2, np.round(coords * 2), atol=1e-9)
    assert shapely.equals(written, shapely.set_precision(SHAPES, 0.5)).all()
    assert shapely.is_valid(written).all()
    assert (result.grid_size, result.tolerance, result.repaired) == (0.5, 0.0, 0)


def test_snap_to_grid_repairs_an_invalid_ring_first_and_counts_it(make_vector: VectorFactory, ctx: JobContext) -> None:
    bowtie = shapely.from_wkt("POLYGON((0 0, 10 10, 10 0, 0 10, 0 0))")
    make_vector("src.gpkg", [bowtie, shapely.box(0.2, 0.2, 3.7, 3.7)], crs="EPSG:32633")

    args = VectorSimplifyArgs(uri="src.gpkg", output="s.gpkg", tolerance=0.1, grid_size=1.0)
    result = vector_simplify(args, ctx)

    written = read(ctx.roots[0] / "s.gpkg")
    assert result.repaired == 1
    assert shapely.is_valid(written).all()
    assert shapely.area(written) == pytest.approx([50.0, 16.0])
    assert result.geometry_type == "MultiPolygon"


def test_simplify_needs_a_tolerance_or_a_grid() -> None:
    with pytest.raises(ValidationError):
        VectorSimplifyArgs(uri="a.gpkg", output="b.gpkg")
