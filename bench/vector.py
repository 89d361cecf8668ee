"""Vector bench: `vector_join` of 1,000,000 points into 100,000 polygons and `vector_overlay` (intersection) of two
200,000-polygon layers, through the running stack, against geopandas in this process and DuckDB spatial's SQL.

The layers are generated here, seeded (`bench/vector_data.py`), as GeoPackages in the stack's workspace. Baselines
run in this process in the same run, interleaved with the calls, end to end as a call is: geopandas reads both
layers (pyogrio, Arrow), joins (`gpd.sjoin`, intersects) or overlays (`gpd.overlay`, intersection), and writes the
same format the call writes; DuckDB spatial reads both layers (`ST_Read`), joins them with `ST_Intersects` in its own
SQL (its default threads) and writes with `COPY`. Geogate runs as `make run` does (`geogate dev`'s pools, 2 worker
processes), each call timed from the call to its answer, with `GEOGATE_LIMIT_FEATURES` raised for layers of this
size; `GEOGATE_VECTOR_PARTITION_FEATURES` and the rest of the environment pass through to the stack. The outputs are
checked against geopandas's: equal feature counts, and for the overlay the same total area within 1e-9.

The floor of a call is the baseline's read and compute shared perfectly over the 2 workers, plus its serial write of
the output (measured in each baseline run).
Usage: python bench/vector.py [--runs 3] [--scale 1] [--formats gpkg,parquet] [--json PATH]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import duckdb_extension_spatial
import geopandas as gpd
from _report import Row, load, show, write_json
from _stack import geogate_stack
from tiles import Session
from vector_data import CRS, write_layers

STACK_ENV = {
    "GEOGATE_LIMIT_FEATURES": "5000000",
    "GEOGATE_CALL_TIMEOUT_S": "3600",
    "GEOGATE_JOB_TIME_LIMIT_S": "3600",
    "GEOGATE_VISIBILITY_TIMEOUT_S": "4000",
}
"""Bounds raised for whole runs of these sizes, unless the environment sets them."""
FORMATS = {"gpkg": "GPKG", "parquet": "Parquet"}
WARM_SCALE = 0.002
"""A small set every job runs once on before the rounds: imports, pools and the extension load, not timed."""
AREA_TOLERANCE = 1e-9
SPATIAL = next(Path(duckdb_extension_spatial.__file__).parent.rglob("*.duckdb_extension"))


@dataclass(frozen=True)
class Phases:
    """One baseline run's seconds: reading the inputs, computing, writing the output."""

    read: float
    compute: float
    write: float

    @property
    def total(self) -> float:
        return self.read + self.compute + self.write

    @property
    def floor(self) -> float:
        """Read and compute split perfectly over 2 workers, then the one write of the output."""
        return (self.read + self.compute) / 2 + self.write


@dataclass
class Outcome:
    """What the rounds measured: milliseconds per job, the baselines' phases, the DuckDB rows and the checks."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    phases: dict[str, list[Phases]] = field(default_factory=dict)
    duckdb_rows: dict[str, int] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    disagree: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    areas: dict[str, float] = field(default_factory=dict)


def read_layer(path: Path) -> gpd.GeoDataFrame:
    return gpd.read_file(path, engine="pyogrio", use_arrow=True)


def write_layer(frame: gpd.GeoDataFrame, path: Path) -> None:
    """The output as a geopandas user writes it: GeoParquet, or through pyogrio with Arrow."""
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_file(path, driver=FORMATS[path.suffix[1:]], engine="pyogrio", use_arrow=True)


def join_frames(data: Path) -> tuple[gpd.GeoDataFrame, ...]:
    return read_layer(data / "points.gpkg"), read_layer(data / "polygons.gpkg")


def overlay_frames(data: Path) -> tuple[gpd.GeoDataFrame, ...]:
    return read_layer(data / "grid_a.gpkg"), read_layer(data / "grid_b.gpkg")


def sjoin(points: gpd.GeoDataFrame, polygons: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """The pairs a `vector_join` writes: every point with the attributes of each polygon it intersects."""
    return gpd.sjoin(points, polygons, predicate="intersects").drop(columns="index_right")


def overlay(a: gpd.GeoDataFrame, b: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    return gpd.overlay(a, b, how="intersection")


BASELINES = {"join": (join_frames, sjoin), "overlay": (overlay_frames, overlay)}
Job = Callable[[str], float]
"""One timed run on the layers of a folder of the workspace (`data`, `warm`): milliseconds."""


def geopandas_run(
    data: Path, read: Callable[..., tuple[gpd.GeoDataFrame, ...]], compute: Callable[..., gpd.GeoDataFrame], out: Path
) -> tuple[Phases, gpd.GeoDataFrame]:
    """One baseline end to end (over no existing output), timed by phase; its result for the checks."""
    out.unlink(missing_ok=True)
    began = time.perf_counter()
    frames = read(data)
    read_at = time.perf_counter()
    result = compute(*frames)
    computed_at = time.perf_counter()
    write_layer(result, out)
    return Phases(read_at - began, computed_at - read_at, time.perf_counter() - computed_at), result


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    """A connection with the spatial extension loaded from its PyPI package, as the workers load it: no download."""
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    con = duckdb.connect(config=config)
    con.execute("SET enable_progress_bar = false")
    con.execute(f"LOAD '{str(SPATIAL).replace(chr(39), chr(39) * 2)}'")
    return con


def duckdb_join(con: duckdb.DuckDBPyConnection, data: Path, out: Path) -> int:
    """The join in DuckDB spatial's SQL, read to write; the rows written."""
    out.unlink(missing_ok=True)
    query = (
        f"SELECT p.* EXCLUDE (fid, geom), z.* EXCLUDE (fid, geom), p.geom FROM ST_Read('{data / 'points.gpkg'}') p "
        f"JOIN ST_Read('{data / 'polygons.gpkg'}') z ON ST_Intersects(p.geom, z.geom)"
    )
    options = "(FORMAT parquet)" if out.suffix == ".parquet" else f"(FORMAT GDAL, DRIVER 'GPKG', SRS '{CRS}')"
    copied = con.execute(f"COPY ({query}) TO '{out}' {options}").fetchone()
    return int(copied[0]) if copied else 0


def call_args(tool: str, sub: str, fmt: str) -> dict[str, object]:
    output = f"{sub}/{tool}-geogate.{fmt}"
    if tool == "join":
        return {"uri": f"{sub}/points.gpkg", "other": f"{sub}/polygons.gpkg", "output": output,
                "predicate": "intersects", "overwrite": True}  # fmt: skip
    return {"uri": f"{sub}/grid_a.gpkg", "other": f"{sub}/grid_b.gpkg", "output": output,
            "how": "intersection", "overwrite": True}  # fmt: skip


def jobs(held: Session, con: duckdb.DuckDBPyConnection, root: Path, fmt: str, got: Outcome) -> dict[str, Job]:
    """Each job of one format, as `name → job(sub)`: runs on the layers in `root / sub`, returns milliseconds and
    keeps what the checks need in `got` (the baselines' phases, DuckDB's rows)."""
    tools = {"join": "vector_join", "overlay": "vector_overlay"}

    def baseline(name: str) -> Callable[[str], float]:
        def run(sub: str) -> float:
            phases, result = geopandas_run(root / sub, *BASELINES[name], root / sub / f"{name}-geopandas.{fmt}")
            got.phases.setdefault(f"{name} {fmt} {sub}", []).append(phases)
            got.counts[f"{name} geopandas {fmt} {sub}"] = len(result)
            if name == "overlay":
                got.areas[f"{fmt} {sub}"] = float(result.area.sum())
            return phases.total * 1000

        return run

    def geogate(name: str) -> Callable[[str], float]:
        return lambda sub: held.call(tools[name], call_args(name, sub, fmt))[0]

    def duck(sub: str) -> float:
        began = time.perf_counter()
        got.duckdb_rows[f"{fmt} {sub}"] = duckdb_join(con, root / sub, root / sub / f"join-duckdb.{fmt}")
        return (time.perf_counter() - began) * 1000

    return {
        f"join geopandas {fmt}": baseline("join"),
        f"join geogate {fmt}": geogate("join"),
        f"join duckdb {fmt}": duck,
        f"overlay geopandas {fmt}": baseline("overlay"),
        f"overlay geogate {fmt}": geogate("overlay"),
    }


def rounds(runs: int, every: dict[str, Job], got: Outcome) -> None:
    """Every job once on the warm-up layers, then `runs` rounds on the bench's in alternating order."""
    for job in every.values():
        job("warm")
    for n in range(runs):
        for name in list(every) if n % 2 == 0 else reversed(list(every)):
            got.samples.setdefault(name, []).append(every[name]("data"))
            print(f"  round {n + 1}: {name:<24} {got.samples[name][-1]:10.0f} ms", flush=True)


def output_of(path: Path) -> gpd.GeoDataFrame:
    """The geometry of an output (no attributes)."""
    if path.suffix == ".parquet":
        return gpd.read_parquet(path, columns=["geometry"])
    return gpd.read_file(path, engine="pyogrio", use_arrow=True, columns=[])


def check(root: Path, fmt: str, got: Outcome) -> None:
    """Geogate's outputs and DuckDB's row count against geopandas's results of the last round."""
    expected = got.counts[f"join geopandas {fmt} data"]
    joined = len(output_of(root / "data" / f"join-geogate.{fmt}"))
    rows = got.duckdb_rows[f"{fmt} data"]
    note = f"join ({fmt}): features geopandas {expected:,}, Geogate {joined:,}, DuckDB {rows:,}"
    _record(got, note, joined == expected == rows)
    expected, area = got.counts[f"overlay geopandas {fmt} data"], got.areas[f"{fmt} data"]
    written = output_of(root / "data" / f"overlay-geogate.{fmt}")
    difference = abs(written.area.sum() - area) / area
    note = (
        f"overlay ({fmt}): features geopandas {expected:,}, Geogate {len(written):,}; "
        f"total area {area:,.0f} m², relative difference {difference:.1e}"
    )
    _record(got, note, len(written) == expected and difference <= AREA_TOLERANCE)


def _record(got: Outcome, note: str, agrees: bool) -> None:
    got.checks.append(f"{note}: {'agree' if agrees else 'DISAGREE'}")
    if not agrees:
        got.disagree.append(note)


def measure_all(runs: int = 3, scale: float = 1.0, formats: tuple[str, ...] = ("gpkg",)) -> tuple[list[Row], Outcome]:
    """The layers written, one stack up with a session held on it, every format's jobs in interleaved rounds; the rows
    and what was measured.

    Raises:
        SystemExit: an output disagrees with geopandas's (after the figures are printed).
    """
    got = Outcome()
    with tempfile.TemporaryDirectory(prefix="geogate-vector-bench-") as tmp:
        root = Path(tmp)
        counts = write_layers(root / "data", scale)
        write_layers(root / "warm", WARM_SCALE)
        print(f"layers: {', '.join(f'{stem} {n:,}' for stem, n in counts.items())}; {load()}", flush=True)
        env = {name: os.environ.get(name, value) for name, value in STACK_ENV.items()}
        with (
            geogate_stack(workers=2, workspace=root, env=env) as urls,
            Session(urls[0]) as held,
            closing(duckdb_connection()) as con,
        ):
            every = {name: job for fmt in formats for name, job in jobs(held, con, root, fmt, got).items()}
            rounds(runs, every, got)
        for fmt in formats:
            check(root, fmt, got)
    rows = report(got, counts, formats)
    if got.disagree:
        raise SystemExit(f"vector: the outputs disagree with geopandas's: {'; '.join(got.disagree)}")
    return rows, got


def measure(runs: int = 3, scale: float = 1.0, formats: tuple[str, ...] = ("gpkg",)) -> list[Row]:
    """The bench's rows (`make bench`'s part `vector`)."""
    return measure_all(runs, scale, formats)[0]


def report(got: Outcome, counts: dict[str, int], formats: tuple[str, ...]) -> list[Row]:
    p50 = {name: statistics.median(values) for name, values in got.samples.items()}
    print(f"vector_join and vector_overlay, 2 workers, against geopandas in this process (medians; {load()})")
    for name, value in p50.items():
        print(f"  {name:<24} {value:10.0f} ms   ({', '.join(f'{v:.0f}' for v in got.samples[name])})")
    for name, phases in got.phases.items():
        if name.endswith(" data"):
            parts = {part: statistics.median(getattr(p, part) for p in phases) for part in ("read", "compute", "write")}
            print(
                f"  geopandas {name.removesuffix(' data')} phases (s): "
                + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
            )
    for fmt in formats:
        for name, other in (("join geogate", "join"), ("overlay geogate", "overlay"), ("join duckdb", "join")):
            ratio = p50[f"{name} {fmt}"] / p50[f"{other} geopandas {fmt}"]
            paired = ", ".join(f"{r:.2f}" for r in _paired(got, f"{name} {fmt}", f"{other} geopandas {fmt}"))
            print(f"  {name} ({fmt}) / geopandas: {ratio:.2f}× of the medians; round by round {paired}")
    for note in got.checks:
        print(f"  check: {note}")
    joined = f"{counts['points']:,} points into {counts['polygons']:,} polygons"
    overlaid = f"{counts['grid_a']:,} × {counts['grid_b']:,} polygons"
    rows = []
    for fmt in formats:
        for name, what in (("join", f"vector_join {joined}"), ("overlay", f"vector_overlay {overlaid}")):
            floors = [p.floor / p.total for p in got.phases[f"{name} {fmt} data"]]
            rows.append(
                Row(f"{what} → {fmt}, 2 workers vs geopandas", p50[f"{name} geogate {fmt}"],
                    p50[f"{name} geopandas {fmt}"], "ms", "ratio", 0.6,
                    baseline_name=f"geopandas in the bench's process: read, {name}, write {fmt}",
                    floor=statistics.median(floors),
                    floor_name="the baseline's read and compute split over 2 workers, plus its write of the output")
            )  # fmt: skip
    return rows


def _paired(got: Outcome, name: str, baseline: str) -> list[float]:
    """The ratio in each round: a call against the baseline run beside it, in the same minutes."""
    return [a / b for a, b in zip(got.samples[name], got.samples[baseline], strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="share of the full sizes (0.05 for a quick run)")
    parser.add_argument("--formats", default="gpkg", help=f"comma-separated outputs of {', '.join(FORMATS)}")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows and the references as JSON")
    ns = parser.parse_args()
    formats = tuple(ns.formats.split(","))
    if unknown := sorted(set(formats) - set(FORMATS)):
        parser.error(f"--formats: unknown {', '.join(unknown)}; expected some of {', '.join(FORMATS)}")
    start = os.getloadavg()
    rows, got = measure_all(ns.runs, ns.scale, formats)
    show("vector", rows)
    if ns.json:
        duck = {fmt: statistics.median(got.samples[f"join duckdb {fmt}"]) for fmt in formats}
        write_json(ns.json, rows, {"start": start, "end": os.getloadavg()}, scale=ns.scale, runs=ns.runs,
                   duckdb_join_ms=duck, checks=got.checks)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
