"""`vector_sql` on layers written here: hostile queries refused, answers checked against geopandas and shapely."""

import time
from pathlib import Path

import geopandas as gpd
import numpy as np
import pyogrio
import pytest
import shapely
import shapely.affinity
from pydantic import ValidationError
from pyproj import Geod

from schemas.tools.sql import SqlLayerRef, VectorSqlArgs
from tests.unit.workers.gdal.test_geoparquet import pointing_elsewhere
from workers.jobkit.confine import confinement
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled, JobFailed
from workers.sql.engine import connection
from workers.tools.sql import vector_sql

HOSTILE = [
    "COPY parcels TO 'stolen.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "ATTACH '/tmp/other.duckdb' AS other",
    "INSTALL httpfs",
    "LOAD spatial",
    "PRAGMA database_list",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "EXPORT DATABASE 'dump'",
    "CREATE TABLE copy AS SELECT * FROM parcels",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM 'parcels.gpkg'",
    "SELECT * FROM ST_Read('parcels.gpkg')",
    "SELECT * FROM st_read('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/passwd')",
    "SELECT * FROM read_parquet('wells.parquet')",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM main.parcels",
    "SELECT * FROM parcels; SELECT 1",
    "SELECT 1; COPY parcels TO 'stolen.csv'",
    "WITH x AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM x",
    "SELECT (SELECT count(*) FROM read_text('/etc/passwd')) AS n FROM parcels",
    "SELECT * FROM parcels WHERE id IN (SELECT 1 FROM glob('/*'))",
    "SELECT * FROM parcels, LATERAL read_csv('/etc/passwd')",
    "SELECT * FROM query_table('parcels')",
    "SHOW ALL TABLES",
    "DESCRIBE duckdb_settings",
    "CALL pragma_version()",
    "UPDATE parcels SET id = 1",
]

CRS_UTM = "EPSG:32633"


@pytest.fixture
def ctx(tmp_path: Path) -> JobContext:
    return JobContext(call_id="test-call", roots=[tmp_path])


@pytest.fixture
def parcels(tmp_path: Path) -> gpd.GeoDataFrame:
    """Projected polygons: squares, one with a hole, a multipolygon, and a polygon sharing an edge."""
    holed = shapely.Polygon(
        [(0, 200), (300, 200), (300, 500), (0, 500)], [[(100, 300), (200, 300), (200, 400), (100, 400)]]
    )
    parts = shapely.MultiPolygon([shapely.box(400, 200, 450, 250), shapely.box(500, 200, 600, 300)])
    edge = shapely.box(90, 0, 100, 90)  # shares edges with squares 0 and 1
    local = [shapely.box(100 * i, 0, 100 * i + 90, 90) for i in range(4)] + [holed, parts, edge]
    shapes = [shapely.affinity.translate(shape, 500_000.0, 4_000_000.0) for shape in local]
    frame = gpd.GeoDataFrame(
        {"id": range(1, len(shapes) + 1), "name": [f"p{i}" for i in range(1, len(shapes) + 1)]},
        geometry=shapes,
        crs=CRS_UTM,
    )
    frame.to_file(tmp_path / "parcels.gpkg", layer="parcels")
    return frame


@pytest.fixture
def wells(tmp_path: Path, parcels: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Random points over the parcels' extent, a few exactly on boundaries and in the hole, as GeoParquet."""
    rng = np.random.default_rng(7)
    minx, miny, maxx, maxy = parcels.total_bounds
    xy = np.c_[rng.uniform(minx - 50, maxx + 50, 400), rng.uniform(miny - 50, maxy + 50, 400)]
    points = [*shapely.points(xy), shapely.Point(minx + 90, miny + 10), shapely.Point(minx + 150, miny + 350)]
    frame = gpd.GeoDataFrame({"depth": np.arange(len(points), dtype=float)}, geometry=points, crs=CRS_UTM)
    frame.to_parquet(tmp_path / "wells.parquet")
    return frame


def run(ctx: JobContext, query: str, **kwargs: object) -> object:
    layers = kwargs.pop("layers", {"parcels": "parcels.gpkg", "wells": "wells.parquet"})
    return vector_sql(VectorSqlArgs(query=query, layers=layers, **kwargs), ctx)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", HOSTILE)
def test_a_hostile_query_is_refused_naming_query(
    ctx: JobContext, parcels: gpd.GeoDataFrame, wells: gpd.GeoDataFrame, query: str
) -> None:
    with pytest.raises(JobFailed) as failed:
        run(ctx, query)

    assert failed.value.field == "query"
    assert failed.value.code in ("query.refused", "query.invalid")
    assert "Traceback" not in failed.value.message
    assert sorted(p.name for p in ctx.roots[0].iterdir()) == ["parcels.gpkg", "wells.parquet"]


def test_the_connection_itself_reaches_no_file_and_cannot_be_reconfigured(
    ctx: JobContext, parcels: gpd.GeoDataFrame
) -> None:
    import duckdb

    with connection({"parcels": (ctx.roots[0] / "parcels.gpkg", None)}, ctx) as (con, _):
        with pytest.raises(duckdb.PermissionException):
            con.sql("SELECT * FROM read_csv('/etc/passwd')").fetchall()
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("SET enable_external_access = true")
        assert con.sql("SELECT count(*) FROM parcels").fetchone() == (len(parcels),)


def test_a_spatial_join_counts_what_geopandas_counts(
    ctx: JobContext, parcels: gpd.GeoDataFrame, wells: gpd.GeoDataFrame
) -> None:
    result = run(
        ctx,
        "SELECT p.id, count(w.depth) AS n FROM parcels p LEFT JOIN wells w ON ST_Intersects(p.geom, w.geom) "
        "GROUP BY p.id ORDER BY p.id",
    )

    joined = gpd.sjoin(parcels, wells, how="left", predicate="intersects")
    expected = joined.groupby("id")["depth"].count().sort_index()
    assert [c.name for c in result.columns] == ["id", "n"]
    assert result.rows == [[int(i), int(n)] for i, n in expected.items()]
    assert sum(r[1] for r in result.rows) > 0
    assert not result.truncated


def test_area_sums_on_a_projected_layer_match_shapely(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    result = run(ctx, "SELECT sum(ST_Area(geom)) AS area, sum(ST_Perimeter(geom)) AS perimeter FROM parcels",
                 layers={"parcels": "parcels.gpkg"})  # fmt: skip

    area, perimeter = result.rows[0]
    assert area == pytest.approx(float(shapely.area(parcels.geometry.values).sum()), rel=1e-12)
    assert perimeter == pytest.approx(float(shapely.length(parcels.geometry.values).sum()), rel=1e-12)
    assert result.layers[0].crs == CRS_UTM and result.layers[0].feature_count == len(parcels)


def test_geometry_comes_back_as_wkt_or_geojson(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    layers = {"parcels": SqlLayerRef(uri="parcels.gpkg", layer="parcels")}
    query = "SELECT id, geom FROM parcels WHERE id = 5"
    as_wkt = run(ctx, query, layers=layers)
    as_json = run(ctx, query, layers=layers, geometry_format="geojson")

    expected = parcels.geometry.iloc[4]
    assert as_wkt.columns[1].type.startswith("GEOMETRY")
    assert shapely.equals(shapely.from_wkt(as_wkt.rows[0][1]), expected)
    assert shapely.equals(shapely.geometry.shape(as_json.rows[0][1]), expected)
    (polygon,) = shapely.get_parts(shapely.from_wkt(as_wkt.rows[0][1]))  # written as a one-part MultiPolygon
    assert shapely.get_num_interior_rings(polygon) == 1


def test_rows_beyond_max_rows_are_dropped_and_said(ctx: JobContext, wells: gpd.GeoDataFrame) -> None:
    result = run(ctx, "SELECT depth FROM wells ORDER BY depth", layers={"wells": "wells.parquet"}, max_rows=7)

    assert (result.row_count, result.truncated) == (7, True)
    assert [r[0] for r in result.rows] == [float(i) for i in range(7)]
    with pytest.raises(ValidationError, match="max_rows"):
        VectorSqlArgs(query="SELECT 1 FROM wells", layers={"wells": "wells.parquet"}, max_rows=20_000)


@pytest.mark.parametrize("output", ["within.gpkg", "within.fgb", "within.parquet"])
def test_an_output_layer_holds_the_rows_the_query_gave(
    ctx: JobContext, parcels: gpd.GeoDataFrame, wells: gpd.GeoDataFrame, output: str
) -> None:
    query = "SELECT w.depth, p.name, w.geom FROM wells w JOIN parcels p ON ST_Within(w.geom, p.geom)"

    result = run(ctx, query, output=output)

    written = (
        gpd.read_parquet(ctx.roots[0] / output) if output.endswith(".parquet") else gpd.read_file(ctx.roots[0] / output)
    )
    expected = gpd.sjoin(wells, parcels, how="inner", predicate="within")
    assert sorted(written["depth"]) == sorted(expected["depth"]) and result.row_count == len(expected)
    assert written.crs.to_epsg() == 32633 and result.crs == CRS_UTM
    assert result.geometry_type == "Point" and result.rows == []
    assert not [p.name for p in ctx.roots[0].iterdir() if ".partial" in p.name]


def test_a_result_without_geometry_is_not_written_as_a_layer(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    with pytest.raises(JobFailed) as failed:
        run(ctx, "SELECT id FROM parcels", layers={"parcels": "parcels.gpkg"}, output="ids.gpkg")

    assert (failed.value.code, failed.value.field) == ("query.no_geometry", "query")
    assert not (ctx.roots[0] / "ids.gpkg").exists()


def test_a_query_error_names_query_with_duckdbs_message(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    with pytest.raises(JobFailed) as failed:
        run(ctx, "SELECT no_such_column FROM parcels", layers={"parcels": "parcels.gpkg"})

    assert (failed.value.code, failed.value.field) == ("query.failed", "query")
    assert "no_such_column" in failed.value.message


def test_a_bad_layer_names_its_entry(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    (ctx.roots[0] / "junk.gpkg").write_bytes(b"not a geopackage")
    for uri, code in (("missing.gpkg", "path.not_found"), ("/etc/passwd", "path.outside_workspace"),
                      ("junk.gpkg", "gdal.not_geospatial")):  # fmt: skip
        with pytest.raises(JobFailed) as failed:
            run(ctx, "SELECT * FROM roads", layers={"roads": uri})
        assert (failed.value.code, failed.value.field) == (code, "layers.roads")
    with pytest.raises(JobFailed) as failed:
        run(ctx, "SELECT * FROM roads", layers={"roads": SqlLayerRef(uri="parcels.gpkg", layer="nope")})
    assert (failed.value.code, failed.value.field) == ("layer.not_found", "layers.roads")


def test_a_slow_query_is_interrupted_at_its_time_limit(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    with pytest.raises(JobFailed) as failed:
        run(ctx, "SELECT count(*) FROM range(100000000000) a, parcels", layers={"parcels": "parcels.gpkg"},
            timeout_s=0.5)  # fmt: skip

    assert (failed.value.code, failed.value.field) == ("query.timeout", "timeout_s")


def test_layers_in_different_crss_need_a_crs_for_the_output(ctx: JobContext, parcels: gpd.GeoDataFrame) -> None:
    parcels.to_crs("EPSG:4326").to_file(ctx.roots[0] / "geo.gpkg")
    query = "SELECT p.id, p.geom FROM parcels p, geo g WHERE p.id = g.id"
    layers = {"parcels": "parcels.gpkg", "geo": "geo.gpkg"}

    with pytest.raises(JobFailed) as failed:
        run(ctx, query, layers=layers, output="out.gpkg")
    assert (failed.value.code, failed.value.field) == ("crs.ambiguous", "crs")

    result = run(ctx, query, layers=layers, output="out.gpkg", crs=CRS_UTM)
    assert result.row_count == len(parcels)
    assert pyogrio.read_info(ctx.roots[0] / "out.gpkg")["crs"] == CRS_UTM


def test_inputs_and_output_go_through_the_confined_paths(
    ctx: JobContext, parcels: gpd.GeoDataFrame, wells: gpd.GeoDataFrame
) -> None:
    (ctx.roots[0] / "outside").mkdir()
    (ctx.roots[0] / "escape.gpkg").symlink_to("/etc/passwd")
    with confinement(ctx.roots):
        result = run(ctx, "SELECT w.depth, w.geom FROM wells w, parcels p WHERE ST_Contains(p.geom, w.geom)",
                     output="outside/inside.gpkg")  # fmt: skip
        with pytest.raises(JobFailed) as failed:
            run(ctx, "SELECT * FROM x", layers={"x": "escape.gpkg"})

    assert result.row_count == len(gpd.read_file(ctx.roots[0] / "outside/inside.gpkg")) > 0
    assert (failed.value.code, failed.value.field) == ("path.outside_workspace", "layers.x")


def test_a_cancelled_call_interrupts_the_running_query(tmp_path: Path, parcels: gpd.GeoDataFrame) -> None:
    def cancelled_once_running(progress: float, total: float | None, message: str | None) -> bool:
        return (message or "").startswith("query running")

    ctx = JobContext(call_id="test-call", roots=[tmp_path], sink=cancelled_once_running)
    started = time.monotonic()
    with pytest.raises(JobCancelled):
        run(ctx, "SELECT count(*) FROM range(100000000000) a, parcels", layers={"parcels": "parcels.gpkg"})

    assert time.monotonic() - started < 10


def test_metric_areas_of_a_geographic_layer_match_geopandas_and_the_ellipsoid(
    ctx: JobContext, parcels: gpd.GeoDataFrame
) -> None:
    geographic = parcels.to_crs("EPSG:4326")
    geographic.to_file(ctx.roots[0] / "geo.gpkg")
    query = (
        "SELECT sum(ST_Area(ST_Transform(geom, 'EPSG:4326', 'EPSG:32633', always_xy := true))) AS utm, "
        "sum(ST_Area_Spheroid(ST_FlipCoordinates(geom))) AS ellipsoid FROM geo"
    )

    result = run(ctx, query, layers={"geo": "geo.gpkg"})

    utm, ellipsoid = result.rows[0]
    geod = Geod(ellps="WGS84")
    assert utm == pytest.approx(float(geographic.to_crs(CRS_UTM).area.sum()), rel=1e-9)
    assert ellipsoid == pytest.approx(
        sum(abs(geod.geometry_area_perimeter(g)[0]) for g in shapely.normalize(geographic.geometry.values)), rel=1e-6
    )
    assert result.layers[0].crs == "EPSG:4326"


def test_a_flatgeobuf_with_features_without_geometry_loads_them_with_a_null_geometry(
    ctx: JobContext, tmp_path: Path
) -> None:
    """GDAL's Arrow stream of such a layer is corrupt (the process reading it through geopandas dies): the layer is
    read feature by feature instead."""
    frame = gpd.GeoDataFrame({"a": [1, 2, 3]}, geometry=[None, shapely.box(0, 0, 1, 1), None], crs=CRS_UTM)
    pyogrio.write_dataframe(frame, tmp_path / "gaps.fgb", layer_options={"SPATIAL_INDEX": "NO"})

    result = run(ctx, "SELECT a, geom IS NULL AS empty FROM gaps ORDER BY a", layers={"gaps": "gaps.fgb"})

    assert result.rows == [[1, True], [2, False], [3, True]]  # type: ignore[attr-defined]


def test_a_geoparquet_layer_that_names_other_files_is_refused(ctx: JobContext, tmp_path: Path) -> None:
    """A Parquet layer is one regular file: not a folder of files, not a file whose column chunks name another."""
    (tmp_path / "outside").mkdir()
    pointing_elsewhere(tmp_path / "hostile.parquet", tmp_path / "outside" / "secret.parquet")
    (tmp_path / "folder.parquet").mkdir()
    gpd.GeoDataFrame({"a": [1]}, geometry=[shapely.Point(0, 0)]).to_parquet(tmp_path / "folder.parquet" / "0.parquet")

    refused = {}
    for uri in ("hostile.parquet", "folder.parquet"):
        with confinement(ctx.roots), pytest.raises(JobFailed) as failed:
            run(ctx, "SELECT * FROM x", layers={"x": uri})
        refused[uri] = (failed.value.code, failed.value.field)

    assert refused == {
        "hostile.parquet": ("path.outside_workspace", "layers.x"),
        "folder.parquet": ("gdal.not_geospatial", "layers.x"),
    }
