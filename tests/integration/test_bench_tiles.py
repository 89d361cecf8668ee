"""The tiles bench's measuring parts: one held client session across calls, figures set against the baselines of
the same stack's rounds (`bench/tiles.py`), and the cost model it computes (`bench/tiles_model.py`): the formula of
`docs/tiles.md`, and the simulation with a shared Redis core and shared storage."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import tiles  # noqa: E402
from _stack import geogate_stack  # noqa: E402
from tiles_model import TiledCall, knee, makespan, predict, scaled, simulate  # noqa: E402

pytestmark = pytest.mark.integration


def test_a_held_session_answers_each_call_and_survives_a_failed_one(tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("not a raster")
    with geogate_stack(workers=1, workspace=tmp_path) as urls, tiles.Session(urls[0]) as held:
        first_ms, first = held.call("ping", {})
        with pytest.raises(SystemExit, match="raster_info failed"):
            held.call("raster_info", {"uri": "note.txt"})
        second_ms, second = held.call("ping", {})
    assert first and second and first != second
    assert first_ms > 0 and second_ms > 0


def test_a_session_that_cannot_open_raises_in_the_caller() -> None:
    with pytest.raises(Exception) as raised:
        tiles.Session("http://127.0.0.1:9/mcp")  # nothing listens on the discard port
    assert not isinstance(raised.value, TimeoutError)


def _rounds(rio1: float, rio2: float, call: str, ms: float) -> dict[str, list[float]]:
    return {"rasterio 1 thread": [rio1] * 3, "rasterio 2 threads": [rio2] * 3, call: [ms] * 3}


def test_figures_use_the_baselines_of_their_own_stacks_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine ran a third faster during the whole stack's rounds: its call is scaled back before comparing."""
    monkeypatch.setattr(tiles, "memory_bound_speedup", lambda: 1.5)  # a process pool's pass, not what is tested here
    rounds = {
        "tiled, 2 workers": _rounds(4000, 2000, "tiled, 2 workers", 2200),
        "whole, 2 workers": _rounds(3000, 1500, "whole, 2 workers", 3300),
        "tiled, 1 worker": _rounds(5000, 2500, "tiled, 1 worker", 5000),
    }
    summary = {"stats tiled": [100.0], "stats whole": [300.0]}
    rows = {
        row.measure.split(" 8192")[0].split(" 16384")[0]: row for row in tiles.report(rounds, summary, {}, 8192, 16384)
    }

    assert rows["tiled reproject"].figure == pytest.approx(2200 / 2000)  # its own rounds' two-thread warp
    assert rows["tiled vs whole reproject"].baseline == pytest.approx(3300 * 4000 / 3000)
    assert rows["tiled vs whole reproject"].figure == pytest.approx(4400 / 2200)
    assert rows["whole reproject"].figure == pytest.approx(3300 / 3000)
    assert rows["tiled reproject, 2 workers vs 1"].figure == pytest.approx(5000 * 4000 / 5000 / 2200)
    assert rows["tiled vs whole raster_stats"].figure == pytest.approx(3.0)


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
