"""`geogate replay --check` of this checkout against another checkout's (the baseline), on one log, in one run.

Appends N events of `bench/ops.py`'s mix through the live append script, brings the ops summary level, then runs
`geogate replay --check` alternately from the baseline checkout and from this one (each command's start included),
`--rounds` times each, and prints the seconds and the ratio. Several baselines (`--against A B …`, for instance the
commits of a series) run in the same alternation, each with its ratio to this checkout.

Usage: python bench/replay_ab.py --against /path/to/main/checkout [more checkouts] [--events 30000] [--rounds 2]
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ops import SPAN_S, Appender, append
from geogate.calls import ops_feed
from geogate.calls.keys import Keys
from geogate.cli.dev import Children, start_redis
from geogate.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def check(tree: Path, env: dict[str, str]) -> tuple[float, str]:
    """Seconds `geogate replay --check` takes when run from `tree`'s code, and its last line."""
    argv = [sys.executable, "-m", "geogate.cli", "replay", "--check"]
    began = time.perf_counter()
    run = subprocess.run(argv, cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    return seconds, (run.stdout.strip().splitlines() or [run.stderr.strip()[-200:]])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, nargs="+", required=True, help="the baseline checkout(s)")
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data, children = Path(tempfile.mkdtemp(prefix="geogate-bench-replay-ab-")), Children()
    times: dict[Path, list[float]] = {tree.resolve(): [] for tree in args.against} | {ROOT: []}
    try:
        url = start_redis(Settings(data_dir=data), children)
        client, keys = redis.Redis.from_url(url), Keys("geogate")
        start = datetime.now(UTC) - timedelta(seconds=SPAN_S + 60)
        append(Appender(client, keys), args.events, start, random.Random(7))
        ops_feed.catch_up(client, keys)
        env = {**os.environ, "REDIS_URL": url, "GEOGATE_LOG_LEVEL": "WARNING"}
        for _ in range(args.rounds):
            for tree, seconds in times.items():
                took, said = check(tree, env)
                seconds.append(took)
                print(f"{tree}: {took:.1f} s ({said})", flush=True)
    finally:
        children.stop()
        shutil.rmtree(data, ignore_errors=True)
    mine = min(times.pop(ROOT))
    for tree, seconds in times.items():
        base = min(seconds)
        print(f"{args.events:,} events: {tree} best {base:.1f} s, this checkout best {mine:.1f} s ({base / mine:.2f}×)")


if __name__ == "__main__":
    main()
