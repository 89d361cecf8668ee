"""Large overlays and joins run as spatial partitions across the workers give what one process gives: the same
features in the same order, the same attributes, geometries equal within 1e-9 of their area. Each call runs through
the real lifecycle on a fakeredis log (`tests/unit/workers/gdal/test_tiled.call`): whole, then partitioned."""

import sqlite3
from contextlib import closing
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyogrio
import pytest
import shapely

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import LimitSettings, Settings
from schemas.codec import encode
from schemas.events import ToolRequested
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from tests.support import drain_queue
from tests.unit.workers.gdal.test_tiled import call
from tests.unit.workers.vector.conftest import UTM, X0, Y0
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.run import runner
from workers.vector.assemble import write_parts
from workers.vector.layers import Target

CELL = 100.0
SIDE = 24
"""A 24×24 grid of 100 m cells: 576 polygons a layer, and 1,500 points."""


def settings(root: Path, *, partitioned: bool) -> Settings:
    per = 250 if partitioned else 1 << 40
    return Settings(redis_url="redis://unused", workspaces=str(root), vector_partition_features=per)


def polygons(offset: float, seed: int) -> gpd.GeoDataFrame:
    """A jittered grid of quadrilaterals, every fifth with a hole and every seventh in two parts."""
    rng = np.random.default_rng(seed)
    shapes, names = [], []
    for i in range(SIDE):
        for j in range(SIDE):
            x, y = X0 + offset + i * CELL, Y0 + offset + j * CELL
            jitter = rng.uniform(-20, 20, 8)
            ring = [
                (x + jitter[0], y + jitter[1]),
                (x + CELL + jitter[2], y + jitter[3]),
                (x + CELL + jitter[4], y + CELL + jitter[5]),
                (x + jitter[6], y + CELL + jitter[7]),
            ]
            shape = shapely.Polygon(ring)
            n = i * SIDE + j
            if n % 5 == 0:
                shape = shape.difference(shapely.Point(x + CELL / 2, y + CELL / 2).buffer(15))
            if n % 7 == 0:
                cut = shape.difference(shapely.box(x + 40, y - 50, x + 45, y + CELL + 50)).geoms[0]
                shape = shapely.MultiPolygon([cut, shapely.box(x + 42, y + 40, x + 43, y + 41)])
            shapes.append(shapely.make_valid(shape))
            names.append(f"p{n}")
    return gpd.GeoDataFrame({"name": names, "n": np.arange(len(names))}, geometry=shapes, crs=UTM)


def points(count: int = 1_500) -> gpd.GeoDataFrame:
    """Random points over the grid, some exactly on cell corners."""
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, SIDE * CELL, (count, 2))
    xy[:50] = np.round(xy[:50] / CELL) * CELL
    geoms = shapely.points(xy + np.array([X0, Y0]))
    return gpd.GeoDataFrame({"name": [f"q{i}" for i in range(count)], "w": rng.uniform(0, 1, count)}, geometry=geoms,
                            crs=UTM)  # fmt: skip


@pytest.fixture
def layers(tmp_path: Path) -> Path:
    for name, frame in (("a.gpkg", polygons(0, 1)), ("b.gpkg", polygons(CELL / 2, 2)), ("pts.gpkg", points())):
        pyogrio.write_dataframe(frame, tmp_path / name)
    pyogrio.write_dataframe(polygons(CELL / 2, 2).to_crs("EPSG:4326"), tmp_path / "b4326.gpkg")
    pyogrio.write_dataframe(points().to_crs("EPSG:4326"), tmp_path / "pts4326.gpkg")
    return tmp_path


def both(
    store: EventStore, root: Path, tool: str, suffix: str = ".gpkg", **args: object
) -> tuple[dict, dict, gpd.GeoDataFrame, ...]:
    whole = call(store, settings(root, partitioned=False), tool, **args, output=f"whole{suffix}")[1]
    call_id, parted = call(store, settings(root, partitioned=True), tool, **args, output=f"parted{suffix}")
    types = [e.type for e in store.read_aggregate(call_aggregate(call_id))]
    assert "tool.fanned_out" in types, "the call ran whole"
    assert not (root / ".geogate").exists(), "the parts were left behind"
    return whole, parted, read(root / f"whole{suffix}"), read(root / f"parted{suffix}")


def read(path: Path) -> gpd.GeoDataFrame:
    return gpd.read_parquet(path) if path.suffix == ".parquet" else pyogrio.read_dataframe(path)


def assert_same(a: gpd.GeoDataFrame, b: gpd.GeoDataFrame) -> None:
    """The same features in the same order: equal attributes, geometries equal within 1e-9 of their area."""
    assert len(a) == len(b) and len(a) > 0
    pd.testing.assert_frame_equal(pd.DataFrame(a.drop(columns="geometry")), pd.DataFrame(b.drop(columns="geometry")))
    ga, gb = a.geometry.values.to_numpy(), b.geometry.values.to_numpy()
    assert (shapely.get_type_id(ga) == shapely.get_type_id(gb)).all()
    area = np.maximum(shapely.area(ga), 1.0)
    assert (shapely.area(shapely.symmetric_difference(ga, gb)) <= 1e-9 * area).all()
    assert shapely.equals_exact(ga, gb, tolerance=1e-6).all()


@pytest.mark.parametrize("how", ["intersection", "union", "difference", "symmetric_difference", "identity"])
def test_a_partitioned_overlay_is_the_one_process_overlay(fake_store: EventStore, layers: Path, how: str) -> None:
    whole, parted, a, b = both(fake_store, layers, "vector_overlay", uri="a.gpkg", other="b.gpkg", how=how)

    assert_same(a, b)
    for key in ("feature_count", "crs", "geometry_type", "empty_dropped"):
        assert parted[key] == whole[key], key
    assert parted["bounds"] == pytest.approx(whole["bounds"], rel=1e-12)
    assert parted["input_feature_counts"] == whole["input_feature_counts"] == [SIDE * SIDE, SIDE * SIDE]
    wanted = gpd.overlay(polygons(0, 1), polygons(CELL / 2, 2), how=how, keep_geom_type=True)
    assert len(b) == len(wanted)
    assert b.area.sum() == pytest.approx(wanted.area.sum(), rel=1e-9)


def test_a_partitioned_overlay_of_a_layer_in_another_crs_is_the_one_process_one(
    fake_store: EventStore, layers: Path
) -> None:
    whole, parted, a, b = both(fake_store, layers, "vector_overlay", uri="a.gpkg", other="b4326.gpkg", how="union")

    assert_same(a, b)
    assert parted["reprojected"] == whole["reprojected"] and whole["reprojected"]


JOINS = {
    "intersects": {"predicate": "intersects"},
    "within-left": {"predicate": "within", "how": "left"},
    "dwithin": {"predicate": "dwithin", "distance": 30.0},
    "aggregates": {
        "predicate": "intersects",
        "how": "left",
        "aggregates": {"n": ["sum", "count", "list"], "name": ["first"]},
    },
    "nearest-3": {"mode": "nearest", "k": 3},
    "nearest-within": {"mode": "nearest", "k": 2, "distance": 40.0, "how": "left"},
}
"""Every kind of join, by name: each runs both ways, whole and partitioned."""


@pytest.mark.parametrize("args", list(JOINS.values()), ids=list(JOINS))
def test_a_partitioned_join_is_the_one_process_join(fake_store: EventStore, layers: Path, args: dict) -> None:
    whole, parted, a, b = both(fake_store, layers, "vector_join", uri="pts.gpkg", other="a.gpkg", **args)

    assert_same(a, b)
    for key in ("feature_count", "matched", "input_feature_counts", "empty_dropped", "crs", "geometry_type"):
        assert parted[key] == whole[key], key
    assert parted["bounds"] == pytest.approx(whole["bounds"], rel=1e-12)


@pytest.mark.parametrize(
    "args",
    [{"predicate": "dwithin", "distance": 30.0}, {"mode": "nearest", "k": 2}],
    ids=["dwithin-metres", "nearest-metres"],
)
def test_a_partitioned_join_in_metres_on_geographic_layers_is_the_one_process_join(
    fake_store: EventStore, layers: Path, args: dict
) -> None:
    whole, parted, a, b = both(fake_store, layers, "vector_join", uri="pts4326.gpkg", other="b4326.gpkg", **args)

    assert_same(a, b)
    assert parted["matched"] == whole["matched"]
    projected = gpd.sjoin(points(), polygons(CELL / 2, 2), predicate="dwithin", distance=30.0)
    if "distance" in args:  # metres on the ellipsoid against metres in UTM: the same pairs, but for a hair's breadth
        assert abs(len(b) - len(projected)) <= 0.002 * len(projected)


def test_a_partitioned_join_of_geoparquet_layers_writes_the_one_process_geoparquet(
    fake_store: EventStore, layers: Path
) -> None:
    points().to_parquet(layers / "pts.parquet")
    polygons(0, 1).to_parquet(layers / "a.parquet")

    whole, parted, a, b = both(fake_store, layers, "vector_join", ".parquet", uri="pts.parquet", other="a.parquet",
                               how="left")  # fmt: skip

    assert_same(a, b)
    assert parted["output"]["driver"] == whole["output"]["driver"] == "Parquet"


def test_partitioned_joins_match_geopandas(fake_store: EventStore, layers: Path) -> None:
    _, parted, _, b = both(fake_store, layers, "vector_join", uri="pts.gpkg", other="b.gpkg", predicate="within")

    wanted = gpd.sjoin(points(), polygons(CELL / 2, 2), predicate="within")
    assert sorted(zip(b["name_1"], b["name_2"], strict=True)) == sorted(
        zip(wanted["name_left"], wanted["name_right"], strict=True)
    )
    assert parted["matched"] == wanted.index.nunique()


def test_small_layers_run_whole(fake_store: EventStore, tmp_path: Path) -> None:
    pyogrio.write_dataframe(points(100), tmp_path / "few.gpkg")
    pyogrio.write_dataframe(polygons(0, 1).iloc[:100], tmp_path / "a.gpkg")
    call_id, _ = call(fake_store, settings(tmp_path, partitioned=True), "vector_join", uri="few.gpkg",
                      other="a.gpkg", output="out.gpkg")  # fmt: skip

    assert "tool.fanned_out" not in [e.type for e in fake_store.read_aggregate(call_aggregate(call_id))]


def failed(store: EventStore, given: Settings, tool: str, **args: object) -> tuple[str, str]:
    """Run `tool` through the lifecycle; its error code and message, once it has failed."""
    valid = TOOLS[tool].args.model_validate(args).model_dump(mode="json")
    event = request_event(TOOLS[tool], valid, call_id=new_id(), actor="tester")
    call_id = event.payload(ToolRequested).call_id
    store.append(event, keys.requested_key(call_id))
    runner.run_call(store, given, "host:p", encode(event))
    drain_queue(store, given)
    state = store.call_state(call_id)
    assert state is not None and state.status == "failed", state
    assert "tool.fanned_out" in [e.type for e in store.read_aggregate(call_aggregate(call_id))]
    return str(state.error_code), str(state.error_message)


def test_an_invalid_geometry_fails_a_partitioned_call_on_its_argument(fake_store: EventStore, layers: Path) -> None:
    frame = polygons(0, 1)
    bowtie = shapely.Polygon([(X0 + 10, Y0 + 10), (X0 + 90, Y0 + 90), (X0 + 90, Y0 + 10), (X0 + 10, Y0 + 90)])
    frame.loc[300, "geometry"] = bowtie
    pyogrio.write_dataframe(frame, layers / "bad.gpkg")

    code, message = failed(fake_store, settings(layers, partitioned=True), "vector_overlay", uri="bad.gpkg",
                           other="b.gpkg", output="out.gpkg")  # fmt: skip

    assert code == "geometry.invalid" and "uri: 1 of" in message
    assert not (layers / "out.gpkg").exists() and not (layers / ".geogate").exists()


def test_a_partitioned_result_past_the_feature_bound_fails_before_it_is_written(
    fake_store: EventStore, layers: Path
) -> None:
    bounded = settings(layers, partitioned=True).model_copy(update={"limits": LimitSettings(features=1_000)})

    code, message = failed(fake_store, bounded, "vector_overlay", uri="a.gpkg", other="b.gpkg", how="union",
                           output="out.gpkg")  # fmt: skip

    assert code == "limit.features" and "output" in message
    assert not (layers / "out.gpkg").exists() and not (layers / ".geogate").exists()


def fanned(store: EventStore, call_id: str) -> dict:
    """The call's `tool.fanned_out` event data."""
    events = store.read_aggregate(call_aggregate(call_id))
    return next(e.data.model_dump() for e in events if e.type == "tool.fanned_out")


@pytest.fixture
def few(layers: Path) -> Path:
    """Beside the 1,500 points, a second layer of 144 polygons (under an eighth): a join of them runs in runs of the
    points, each against the whole second layer."""
    pyogrio.write_dataframe(polygons(CELL / 2, 2).iloc[::4], layers / "few.gpkg")
    pyogrio.write_dataframe(polygons(CELL / 2, 2).iloc[::4].to_crs("EPSG:4326"), layers / "few4326.gpkg")
    return layers


@pytest.mark.parametrize(
    "args",
    [*JOINS.values(), {"predicate": "intersects", "other": "few4326.gpkg"}],
    ids=[*JOINS, "other-crs"],
)
def test_a_join_against_a_small_layer_runs_in_runs_of_the_first_and_is_the_one_process_join(
    fake_store: EventStore, few: Path, args: dict
) -> None:
    args = {"uri": "pts.gpkg", "other": "few.gpkg", **args}
    whole = call(fake_store, settings(few, partitioned=False), "vector_join", **args, output="whole.gpkg")[1]
    call_id, parted = call(fake_store, settings(few, partitioned=True), "vector_join", **args, output="parted.gpkg")

    grid = fanned(fake_store, call_id)
    assert (grid["tiles"], grid["columns"], grid["rows"]) == (6, 6, 1)  # 1,500 points in runs of 250
    assert not (few / ".geogate").exists()
    assert_same(read(few / "whole.gpkg"), read(few / "parted.gpkg"))
    for key in ("feature_count", "matched", "input_feature_counts", "empty_dropped", "crs", "geometry_type",
                "reprojected"):  # fmt: skip
        assert parted[key] == whole[key], key


@pytest.mark.parametrize("suffix", [".fgb", ".parquet", ".shp", ".gpkg"])
def test_runs_of_other_formats_and_features_without_geometry_are_the_one_process_join(
    fake_store: EventStore, few: Path, suffix: str
) -> None:
    frame, missing, runs = points(), 0, suffix != ".fgb"
    if runs:  # FlatGeobuf cannot start reading in the middle (cells, which its spatial index reads): no null geometry
        frame.loc[[0, 700, 1499], "geometry"] = None
        missing = 3
    suffix = "_null.gpkg" if suffix == ".gpkg" else suffix
    if suffix == ".parquet":
        frame.to_parquet(few / f"pts{suffix}")
    else:
        pyogrio.write_dataframe(frame, few / f"pts{suffix}")
    args = {"uri": f"pts{suffix}", "other": "few.gpkg", "how": "left", "predicate": "intersects"}
    whole = call(fake_store, settings(few, partitioned=False), "vector_join", **args, output="whole.gpkg")[1]
    call_id, parted = call(fake_store, settings(few, partitioned=True), "vector_join", **args, output="parted.gpkg")

    assert (fanned(fake_store, call_id)["rows"] == 1) == runs  # runs: one row of 6; cells: 3 rows
    assert_same(read(few / "whole.gpkg"), read(few / "parted.gpkg"))
    assert parted["empty_dropped"] == whole["empty_dropped"] == missing
    assert parted["feature_count"] == whole["feature_count"]


def test_runs_count_the_repairs_of_the_second_layer_once(fake_store: EventStore, few: Path) -> None:
    frame = polygons(CELL / 2, 2).iloc[::4].reset_index(drop=True)
    x, y = X0 + 1_000, Y0 + 1_000
    frame.loc[5, "geometry"] = shapely.Polygon([(x, y), (x + 90, y + 90), (x + 90, y), (x, y + 90)])  # a bow tie
    pyogrio.write_dataframe(frame, few / "few_bad.gpkg")
    args = {"uri": "pts.gpkg", "other": "few_bad.gpkg", "make_valid": True}
    whole = call(fake_store, settings(few, partitioned=False), "vector_join", **args, output="whole.gpkg")[1]
    call_id, parted = call(fake_store, settings(few, partitioned=True), "vector_join", **args, output="parted.gpkg")

    assert fanned(fake_store, call_id)["tiles"] == 6
    assert parted["repaired"] == whole["repaired"] == 1
    assert_same(read(few / "whole.gpkg"), read(few / "parted.gpkg"))


def test_a_second_layer_changed_between_calls_is_read_again(fake_store: EventStore, few: Path) -> None:
    args = {"uri": "pts.gpkg", "other": "few.gpkg", "predicate": "intersects", "overwrite": True}
    first = call(fake_store, settings(few, partitioned=True), "vector_join", **args, output="one.gpkg")[1]
    fewer = polygons(CELL / 2, 2).iloc[::8]
    fewer["name"] = "changed"
    pyogrio.write_dataframe(fewer, few / "few.gpkg")
    second = call(fake_store, settings(few, partitioned=True), "vector_join", **args, output="two.gpkg")[1]

    wanted = gpd.sjoin(points(), fewer, predicate="intersects")
    assert second["feature_count"] == len(wanted) < first["feature_count"]
    assert set(read(few / "two.gpkg")["name_2"]) == {"changed"}


@pytest.mark.parametrize("body", [b"not an arrow file", b"ARROW1\0\0" + b"\xff" * 64, "no-geo"])
def test_a_part_that_is_not_a_part_fails_the_fan_in_and_writes_nothing(tmp_path: Path, body: bytes | str) -> None:
    part = tmp_path / "part0.arrow"
    if body == "no-geo":  # an Arrow file, but not a part: no GeoParquet metadata
        table = pa.table({"geometry": pa.array([shapely.to_wkb(shapely.Point(0, 0))])})
        with pa.ipc.new_file(str(part), table.schema) as sink:
            sink.write_table(table)
    else:
        part.write_bytes(body)
    out = Target(tmp_path / "out.gpkg", "GPKG")
    described = [{"rows": 1, "dropped": 0, "kinds": [0], "bounds": [0, 0, 0, 0]}]

    with pytest.raises(JobFailed) as failed:
        write_parts([part], described, out, JobContext(call_id="c", roots=[tmp_path]), "EPSG:3857", "Point")

    assert failed.value.code == "tiles.invalid_part"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part0.arrow"]


def test_runs_of_a_geopackage_with_gaps_in_its_ids_are_the_one_process_join(fake_store: EventStore, few: Path) -> None:
    pyogrio.write_dataframe(points(), few / "gaps.gpkg", layer="gaps")
    with closing(sqlite3.connect(few / "gaps.gpkg")) as db, db:
        db.execute("DELETE FROM gaps WHERE fid % 11 = 3 OR fid BETWEEN 400 AND 480")  # 1,500 - 211
    args = {"uri": "gaps.gpkg", "other": "few.gpkg", "how": "left"}
    whole = call(fake_store, settings(few, partitioned=False), "vector_join", **args, output="whole.gpkg")[1]
    call_id, parted = call(fake_store, settings(few, partitioned=True), "vector_join", **args, output="parted.gpkg")

    assert fanned(fake_store, call_id)["rows"] == 1
    assert_same(read(few / "whole.gpkg"), read(few / "parted.gpkg"))
    assert parted["input_feature_counts"] == whole["input_feature_counts"] == [1_289, 144]
    assert parted["feature_count"] == whole["feature_count"]
