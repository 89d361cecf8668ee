"""`make bench`: every row of the bench table in one run, each against its baseline measured in the same run.

Geogate runs as `make run` runs it (`geogate dev`'s worker pools, `geogate.cli.dev.worker_pools`). Prints the load
average at the start (and before each part), each part's details, then one table: measure, value, baseline,
ratio or added time, target, met. `--json PATH` also writes the table as JSON (the README's figures come from it).
Each part runs alone too: bench/overhead.py, handlers.py, gdal.py, throughput.py, tiles.py, gis.py, vector.py,
stac.py.
With `--runs N` every part runs N times (the parts in turn, so that a noisy minute hits one run of each) and the
table gives, for each row, the run with the median figure, the median floor and the range of the figure.
Usage: python bench/run.py [--quick] [--runs 1] [--only overhead,handlers,gdal,throughput,tiles,gis,vector,stac]
       [--json .bench/results.json]
"""

import argparse
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import gdal
import gis
import handlers
import overhead
import stac
import throughput
import tiles
import vector
from _report import Row, combined, load, table, write_json

from geogate.cli.dev import stop_on_signals

PARTS: dict[str, tuple[str, Callable[[bool], list[Row]]]] = {
    "overhead": ("ping over a bare MCPServer", lambda quick: overhead.measure(calls=150 if quick else 500)),
    "handlers": ("a trivial Python result handler", lambda quick: handlers.measure(calls=90 if quick else 300)),
    "gdal": (
        "raster_info vs gdal-mcp, raster_reproject vs in-process, 1 vs 2 workers",
        lambda quick: gdal.measure(*((60, 5, 2) if quick else (200, 15, 3))),
    ),
    "throughput": ("64 concurrent clients (wrk)", lambda quick: throughput.measure(seconds=4 if quick else 10)),
    "tiles": (
        "one 8192² reprojection and one 16384² statistics call over every worker",
        lambda quick: tiles.measure(*((1, 8192, 8192) if quick else (3, 8192, 16384))),
    ),
    "gis": (
        "raster_calc NDVI and raster_terrain slope on 8192², whole and tiled, vs numexpr in-process",
        lambda quick: gis.measure(runs=1 if quick else 3),
    ),
    "vector": (
        "vector_join of 1,000,000 points into 100,000 polygons, vector_overlay of two 200,000-polygon layers",
        lambda quick: vector.measure(*((1, 0.1) if quick else (3, 1.0))),
    ),
    "stac": (
        "stac_composite of 6 Sentinel-2-like items over 3 tiles, 2 workers, vs odc-stac with dask",
        lambda quick: stac.measure(runs=1 if quick else 3),
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (about a third of the time)")
    parser.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts of {', '.join(PARTS)}")
    parser.add_argument("--runs", type=int, default=1, help="run every part this many times; rows are medians")
    parser.add_argument("--json", type=Path, default=None, help="also write the table as JSON to this file")
    ns = parser.parse_args()
    parts = ns.only.split(",")
    if unknown := sorted(set(parts) - set(PARTS)):
        parser.error(f"--only: unknown part(s) {', '.join(unknown)}; expected some of {', '.join(PARTS)}")
    if ns.runs < 1:
        parser.error(f"--runs: expected 1 or more, got {ns.runs}")
    stop_on_signals()  # SIGTERM/SIGHUP end the run through every `finally`: no process it started outlives it
    began, loads = time.monotonic(), {"start": os.getloadavg()}
    runs: list[list[Row]] = [[] for _ in range(ns.runs)]
    print(f"make bench{' --quick' if ns.quick else ''}: {load(loads['start'])}", flush=True)
    failed = []
    for n, rows_of_run in enumerate(runs, start=1):
        if ns.runs > 1:
            print(f"\n######## run {n} of {ns.runs}", flush=True)
        failed += [name for name in parts if not run_part(name, ns.quick, loads, rows_of_run, n)]
    rows = combined(runs)
    loads["end"] = os.getloadavg()
    print(f"\nthe bench table ({time.monotonic() - began:.0f} s); at the start: {load(loads['start'])}")
    print(f"at the end: {load(loads['end'])}")
    print(table(rows))
    if failed:
        print(f"FAILED: {', '.join(failed)} (see above)")
    if ns.json:
        write_json(ns.json, rows, loads, quick=ns.quick, runs=ns.runs, failed=failed)
        print(f"written to {ns.json}")
    return 1 if failed else 0


def run_part(name: str, quick: bool, loads: dict[str, tuple[float, float, float]], rows: list[Row], n: int) -> bool:
    """One part's rows into `rows`; a part that fails is reported and the others still run."""
    title, run = PARTS[name]
    key = f"{name} {n}" if n > 1 else name
    loads[key] = os.getloadavg()
    print(f"\n== {name}: {title}  [{load(loads[key])}]", flush=True)
    try:
        rows += run(quick)
    except SystemExit as exc:
        if not isinstance(exc.code, str):  # a signal's orderly stop (`stop_on_signals`), not a bench's complaint
            raise
        print(f"{name} failed: {exc.code}", file=sys.stderr)
        return False
    except Exception:
        traceback.print_exc()
        return False
    return True


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)
