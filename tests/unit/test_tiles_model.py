"""The tiled call's cost model (`bench/tiles_model.py`): the formula of `docs/tiles.md`, and the simulation with a
shared Redis core and shared storage that says where more workers stop helping."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from tiles_model import TiledCall, knee, makespan, predict, scaled, simulate

CALL = TiledCall(plan_s=0.03, tiles_s=(0.2, 0.1, 0.1, 0.05), fan_in_wait_s=0.004, assembly_s=0.02)


def test_the_makespan_hands_tiles_in_order_to_the_worker_free_first() -> None:
    assert makespan([0.2, 0.1, 0.1, 0.05], 1) == pytest.approx(0.45)
    assert makespan([0.2, 0.1, 0.1, 0.05], 2) == pytest.approx(0.25)  # 0.2 | 0.1, 0.1, 0.05
    assert makespan([0.2, 0.1, 0.1, 0.05], 8) == pytest.approx(0.2)  # never below the longest tile


def test_the_formula_is_the_serial_parts_plus_the_makespan() -> None:
    assert predict(CALL, 1) == pytest.approx(0.054 + 0.45)
    assert predict(CALL, 2) == pytest.approx(0.054 + 0.25)


def test_with_nothing_shared_the_simulation_is_the_formula() -> None:
    for workers in (1, 2, 3, 16):
        assert simulate(CALL, workers) == pytest.approx(predict(CALL, workers))


def test_a_shared_redis_core_bounds_the_call_by_the_tiles_it_must_serve() -> None:
    many = scaled(TiledCall(0.0, (0.1,), 0.0, 0.0, redis_s_per_tile=0.001), 1000)
    assert simulate(many, 1000) == pytest.approx(1000 * 0.001 + 0.1, rel=0.01)
    assert knee(many) in (64, 128)  # about t / r = 100 workers keep Redis busy


def test_shared_storage_stops_more_workers_from_helping_sooner_than_redis() -> None:
    tiles = scaled(TiledCall(0.0, (0.1,), 0.0, 0.0, tile_bytes=16e6, redis_s_per_tile=0.0001), 512)
    slow, fast = knee(tiles, storage_bytes_s=1.1e8), knee(tiles, storage_bytes_s=1.1e9)
    assert slow < fast
    assert simulate(tiles, 64, 1.1e8) == pytest.approx(512 * 16e6 / 1.1e8, rel=0.05)  # the storage's bound
