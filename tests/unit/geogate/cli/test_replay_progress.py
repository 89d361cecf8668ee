"""`geogate replay`'s progress report: plain lines off a terminal, at most one per phase every `EVERY_S`, and always
the line of a phase's end."""

import io

import pytest

from geogate.cli import replay_progress
from geogate.cli.replay_progress import ReplayProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_phase_writes_a_line_every_ten_seconds_and_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, out = Clock(), io.StringIO()
    monkeypatch.setattr(replay_progress.time, "monotonic", clock)

    with ReplayProgress(out, live=False) as progress:
        clock.now += 2  # the work before the first report: part of the phase
        progress("rebuild", 10_000, 40_000)  # 2 s in: no line yet
        clock.now += 4
        progress("rebuild", 20_000, 40_000)  # 6 s in: still none
        clock.now += 4
        progress("rebuild", 30_000, 40_000)  # 10 s in: a line
        clock.now += 1
        progress("rebuild", 40_000, 40_000)  # the end: always
        progress("rebuild", 40_000, 40_000)  # said already
        progress("compare", 500, 500)
        progress("swap", 1_000, 1_000)

    assert out.getvalue().splitlines() == [
        "replay: rebuild 30,000 of 40,000 events (75%, 3,000/s)",
        "replay: rebuild 40,000 of 40,000 events (100%, 3,636/s)",
        "replay: compare 500 of 500 key pairs (100%)",
        "replay: swap 1,000 of 1,000 keys (100%)",
    ]


def test_on_a_terminal_each_phase_is_a_bar_with_its_count() -> None:
    out = io.StringIO()

    with ReplayProgress(out, live=True) as progress:
        progress("rebuild", 5, 10)
        progress("rebuild", 10, 10)
        progress("compare", 3, 3)

    bars = {task.description: (task.completed, task.total) for task in progress.bar.tasks}
    assert bars == {"rebuild": (10, 10), "compare": (3, 3)}
    assert "rebuild" in out.getvalue() and "10/10" in out.getvalue()
