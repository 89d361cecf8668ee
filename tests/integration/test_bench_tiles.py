"""The tiles bench's measuring parts: one held client session across calls, and figures set against the baselines
of the same stack's rounds (`bench/tiles.py`)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import tiles  # noqa: E402
from _stack import geogate_stack  # noqa: E402

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
