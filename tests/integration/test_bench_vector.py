"""The vector bench's layers are what it claims (`bench/vector_data.py`), its baselines compute the same join, and
a run through the stack checks Geogate's outputs against geopandas's (`bench/vector.py`)."""

import sys
from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest
import shapely

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import vector  # noqa: E402
import vector_data  # noqa: E402

pytestmark = pytest.mark.integration

SCALE = 0.002


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    root = tmp_path_factory.mktemp("vector-bench")
    return root, vector_data.write_layers(root, SCALE)


def test_the_layers_are_valid_sized_by_the_scale_and_in_the_projected_crs(layers: tuple[Path, dict[str, int]]) -> None:
    root, counts = layers
    for stem, count in counts.items():
        frame = gpd.read_file(root / f"{stem}.gpkg")
        assert len(frame) == count
        assert frame.crs == vector_data.CRS
        assert shapely.is_valid(frame.geometry.values.to_numpy()).all(), stem
    assert counts["points"] == 2_000 and counts["polygons"] == 200
    assert counts["grid_a"] == counts["grid_b"] == 400  # 20 × 20


def test_the_voronoi_cells_tile_the_square_and_some_have_holes(layers: tuple[Path, dict[str, int]]) -> None:
    polygons = gpd.read_file(layers[0] / "polygons.gpkg").geometry.values.to_numpy()
    shells = shapely.polygons(shapely.get_exterior_ring(polygons))
    assert shapely.area(shells).sum() == pytest.approx(vector_data.SIDE**2, rel=1e-9)
    assert shapely.area(shapely.union_all(shells)) == pytest.approx(vector_data.SIDE**2, rel=1e-9)
    assert (shapely.get_num_interior_rings(polygons) == 1).sum() == len(polygons) // vector_data.HOLE_EVERY


def test_each_cell_of_one_grid_overlaps_about_four_of_the_other(layers: tuple[Path, dict[str, int]]) -> None:
    a = gpd.read_file(layers[0] / "grid_a.gpkg").geometry.values.to_numpy()
    b = gpd.read_file(layers[0] / "grid_b.gpkg").geometry.values.to_numpy()
    left, right = shapely.STRtree(b).query(a, predicate="intersects")
    overlap = shapely.area(shapely.intersection(a[left], b[right])) > 0
    per_cell = np.bincount(left[overlap], minlength=len(a))
    assert np.median(per_cell) == 4


def test_duckdb_s_join_finds_the_pairs_geopandas_finds(layers: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    root = layers[0]
    expected = vector.sjoin(*vector.join_frames(root))
    con = vector.duckdb_connection()
    try:
        written = vector.duckdb_join(con, root, tmp_path / "join.gpkg")
    finally:
        con.close()
    got = gpd.read_file(tmp_path / "join.gpkg")
    assert written == len(got) == len(expected)
    assert sorted(zip(got["pid"], got["zone"], strict=True)) == sorted(
        zip(expected["pid"], expected["zone"], strict=True)
    )


def test_the_floor_halves_read_and_compute_and_keeps_the_write() -> None:
    phases = vector.Phases(read=2.0, compute=6.0, write=3.0)
    assert phases.total == 11.0
    assert phases.floor == 7.0


def test_a_run_through_the_stack_agrees_with_geopandas() -> None:
    rows, got = vector.measure_all(runs=1, scale=SCALE)
    assert [row.measure.split(" ")[0] for row in rows] == ["vector_join", "vector_overlay"]
    assert got.checks and all(check.endswith(": agree") for check in got.checks)
    assert all(row.value > 0 and row.baseline > 0 and row.floor is not None for row in rows)
