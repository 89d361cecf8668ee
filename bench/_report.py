"""The rows of `make bench`'s table: a measure, its baseline from the same run, the target, whether it is met, and the
floor: the same figure for the same work behind one Celery hop with nothing of Geogate's (bench/hop.py), or, where
a row has no hop to take away, the part alone (the sandbox run of a handler), measured in the same run. The ping
rows also give the floor of an event-sourced call: the same hop with the log's three appends (bench/_hoplog.py).

Every bench that measures a row returns `Row`s; `bench/run.py` (`make bench`) prints them as one table and can
write them as JSON for the README.
"""

import json
import os
import statistics
import subprocess
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

Compare = Literal["added", "ratio", "speed-up"]
"""How a measure is set against its baseline: `value - baseline`, `value / baseline`, or `baseline / value`."""


@dataclass(frozen=True)
class Row:
    """One measure against its baseline, measured in the same run."""

    measure: str
    value: float
    baseline: float
    unit: str
    """Of `value` and `baseline` (ms, calls/s)."""
    compare: Compare
    target: float
    at_most: bool = True
    """The target is an upper bound (`<=`); else a lower bound (`>=`)."""
    baseline_name: str = ""
    """What the baseline is (a bare MCPServer, gdal-mcp 1.1.3, …)."""
    floor: float | None = None
    """The same figure (added ms or ratio) for the floor, measured in the same run; None when not measured."""
    floor_name: str = ""
    """What the floor is."""
    log_floor: float | None = None
    """The same figure behind the same hop with the event log's appends (bench/_hoplog.py); None when not measured."""
    spread: tuple[float, float] | None = None
    """The lowest and highest figure over several runs, when this row is their median (`combined`)."""

    @property
    def figure(self) -> float:
        if self.compare == "added":
            return self.value - self.baseline
        if self.compare == "ratio":
            return self.value / self.baseline
        return self.baseline / self.value

    @property
    def met(self) -> bool:
        return self._within(self.figure)

    def meets(self, figure: float | None) -> bool | None:
        """Whether `figure` (a floor) meets the target (None: not measured)."""
        return None if figure is None else self._within(figure)

    def _within(self, figure: float) -> bool:
        return figure <= self.target if self.at_most else figure >= self.target

    def shown(self, figure: float) -> str:
        return f"{figure:+.2f} {self.unit}" if self.compare == "added" else f"{figure:.2f}×"

    def cells(self) -> list[str]:
        bound = "≤" if self.at_most else "≥"
        figure = self.shown(self.figure)
        if self.spread is not None:
            figure += f" ({self.shown(self.spread[0])} to {self.shown(self.spread[1])})"
        return [
            self.measure,
            f"{self.value:,.2f} {self.unit}",
            f"{self.baseline:,.2f} {self.unit}",
            figure,
            f"{bound} {self.shown(self.target)}",
            "yes" if self.met else "NO",
            *self._floor_cells(self.floor),
            *self._floor_cells(self.log_floor),
        ]

    def _floor_cells(self, floor: float | None) -> list[str]:
        """A floor and whether it meets the target; blank when not measured."""
        if floor is None:
            return ["", ""]
        return [self.shown(floor), "yes" if self._within(floor) else "no"]

    def as_json(self) -> dict[str, Any]:
        rounded = {"value": round(self.value, 3), "baseline": round(self.baseline, 3), "figure": round(self.figure, 3)}
        floor = None if self.floor is None else round(self.floor, 3)
        log_floor = None if self.log_floor is None else round(self.log_floor, 3)
        return (
            asdict(self)
            | rounded
            | {
                "floor": floor,
                "met": self.met,
                "floor_meets_target": self.meets(self.floor),
                "log_floor": log_floor,
                "log_floor_meets_target": self.meets(self.log_floor),
            }
        )


HEADER = [
    "measure",
    "value",
    "baseline",
    "ratio / added",
    "target",
    "met?",
    "floor",
    "floor meets it?",
    "floor with the log",
    "meets it?",
]


def combined(runs: list[list[Row]]) -> list[Row]:
    """One row per measure over several runs: the run with the median figure (the lower middle one for an even
    number of runs), with the median floor and the range of the figure. A single run is returned as it is."""
    if len(runs) == 1:
        return runs[0]
    by_measure: dict[str, list[Row]] = {}
    for row in (row for run in runs for row in run):
        by_measure.setdefault(row.measure, []).append(row)
    out = []
    for rows in by_measure.values():
        ordered = sorted(rows, key=lambda r: r.figure)
        floors = [r.floor for r in rows if r.floor is not None]
        log_floors = [r.log_floor for r in rows if r.log_floor is not None]
        spread = (ordered[0].figure, ordered[-1].figure)
        floor = statistics.median(floors) if floors else None
        log_floor = statistics.median(log_floors) if log_floors else None
        out.append(replace(ordered[(len(ordered) - 1) // 2], floor=floor, log_floor=log_floor, spread=spread))
    return out


def load(averages: tuple[float, float, float] | None = None) -> str:
    """`uptime`'s load average (1, 5, 15 min) and the number of CPUs, now or as given."""
    one, five, fifteen = averages or os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cpus)"


def table(rows: list[Row]) -> str:
    lines = [HEADER, *(row.cells() for row in rows)]
    widths = [max(len(line[n]) for line in lines) for n in range(len(HEADER))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def show(title: str, rows: list[Row]) -> None:
    """A bench's own rows, as it prints them when run alone."""
    print(f"\n{title}\n{table(rows)}")


def write_json(path: Path, rows: list[Row], loads: dict[str, tuple[float, float, float]], **about: object) -> None:
    """The table as JSON; `loads` are the load averages (1, 5, 15 min) at each point of the run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "cpus": os.cpu_count(),
        "load": loads,
        **about,
        "rows": [row.as_json() for row in rows],
    }
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return out.stdout.strip()
