"""The floor under `geogate replay` on this machine: what reading the log costs before any fold, and what Redis'
own commands for a rebuild cost, measured on a real log in one process and one run.

Over a log `bench/ops.py --data DIR` left in DIR (1,000,002 events by default), this times:

- `import geogate.cli.main`: what the command pays before its first event;
- the log read raw: every entry of every stream by `XRANGE` (batches of `READ_BATCH`) on one connection, parsed
  by hiredis into nested lists, no redis-py reply callback, no merge: the floor of any replay that reads the log
  from Redis in Python;
- the same with `msgpack.unpackb` of each event (the floor of any decoder of these bytes, schema or none);
- the same with `schemas.codec.decode` of each event (the event schema's one definition, which replay keeps);
- the same with the projectors run on each decoded event (`ops_for`: the live path's folds, which replay reuses);
- `geogate.eventlog.replay.replay` itself (rebuild, compare, swap the identical rebuild in), with Redis'
  per-command statistics (`INFO commandstats`, reset first).

Each line gives wall seconds, this process' CPU seconds and Redis' CPU seconds (main thread; the CPU of its AOF
rewrites, child processes, apart). At 100,000 events/s a 1M-event replay has 10 s of wall time.

The floor lines sum, for Python, the command's import and the raw read with the unpacking (the minimum before any
validation, fold, write or comparison), then with the decode and the projectors instead (the minimum of a replay
that keeps the schema's decoder and the live path's projectors, before it applies an op or writes a key); for Redis,
the time its commandstats give the commands the rebuild needs whatever the code around them: the projection keys'
writes (HSET, RPUSH, SADD, HINCRBY, PEXPIREAT), the log's reads (XRANGE), one DUMP of each key on each side for the
comparison and one RENAME per key for the swap. Not in it: the script calls around those commands (Lua, argument
conversion), SCAN, EXISTS, the network, the AOF.

Run: `.venv/bin/python bench/replay_floor.py --data DIR` (after `.venv/bin/python bench/ops.py --data DIR`).
"""

import argparse
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgpack
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from geogate.calls.keys import Keys
from geogate.calls.projections import ops_for
from geogate.calls.store import EventStore
from geogate.cli import dev
from geogate.cli.dev import Children, start_redis
from geogate.eventlog import replay
from geogate.eventlog.keys import all_categories
from geogate.eventlog.storage import log_length
from geogate.eventlog.store import sync_client
from geogate.settings import Settings
from schemas.codec import decode

TARGET = 100_000
"""The target rate of replay, in events a second: 10 s for a 1M-event log."""
NEEDED = ("hset", "rpush", "sadd", "hincrby", "pexpireat", "xrange", "dump", "rename")
"""Commands a rebuild beside the live projections needs, whatever code issues them (see the module docstring)."""


def redis_cpu(client: redis.Redis) -> tuple[float, float]:
    """(main thread, child processes) CPU seconds Redis has used."""
    info = client.info("cpu")
    main = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return main, float(info["used_cpu_user_children"]) + float(info["used_cpu_sys_children"])


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def raw_read(client: redis.Redis, keys: Keys, each: Callable[[bytes], Any] | None = None) -> int:
    """Every entry, read raw on one connection (hiredis' nested lists); `each` called on each event's bytes."""
    connection = client.connection_pool.get_connection()
    count = 0
    try:
        for category in all_categories():
            cursor: bytes = b"-"
            while True:
                connection.send_command("XRANGE", keys.stream(category), cursor, "+", "COUNT", replay.READ_BATCH)
                batch = connection.read_response()
                if each is not None:
                    for _, fields in batch:
                        each(fields[fields.index(b"event") + 1])
                count += len(batch)
                if len(batch) < replay.READ_BATCH:
                    break
                cursor = b"(" + batch[-1][0]
    finally:
        client.connection_pool.release(connection)
    return count


def imported() -> int:
    subprocess.run([sys.executable, "-c", "import geogate.cli.main"], check=True)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a directory `bench/ops.py --data` filled")
    args = parser.parse_args()
    dev._wait_for_redis = partial(dev._wait_for_redis, timeout_s=300)  # a 1M-event log loads for a while
    children = Children()
    try:
        client = sync_client(start_redis(Settings(data_dir=args.data), children))
        store = EventStore(client, Keys("geogate"))
        project = lambda raw: ops_for(decode(raw), store.live)  # noqa: E731
        events = log_length(client, store.keys)
        parts: list[tuple[str, Callable[[], Any]]] = [
            ("import geogate.cli.main", imported),
            ("the log read raw (XRANGE, hiredis)", lambda: raw_read(client, store.keys)),
            ("the log read raw + msgpack.unpackb", lambda: raw_read(client, store.keys, msgpack.unpackb)),
            ("the log read raw + schemas.codec.decode", lambda: raw_read(client, store.keys, decode)),
            ("the log read raw + decode + projectors", lambda: raw_read(client, store.keys, project)),
            ("replay (rebuild, compare, swap)", lambda: replay.replay(store).events),
        ]
        print(f"log: {events:,} events, {client.dbsize():,} keys; the target's budget: {events / TARGET:.1f} s")
        walls: dict[str, float] = {}
        for name, fn in parts:
            client.config_resetstat()
            (r0, k0), c0, t0 = redis_cpu(client), own_cpu(), time.perf_counter()
            went = fn()
            wall, cpu, (r1, k1) = time.perf_counter() - t0, own_cpu() - c0, redis_cpu(client)
            walls[name] = wall
            if went and went != events:
                raise SystemExit(f"{name} went through {went:,} events of {events:,}")
            rate = f" | {went / wall:,.0f} events/s" if went else " (a process of its own)"
            print(f"{name}: wall {wall:.1f} s | Python CPU {cpu:.1f} s | Redis CPU {r1 - r0:.1f} s "
                  f"(its AOF rewrites {k1 - k0:.1f} s){rate}")  # fmt: skip
        stats = client.info("commandstats")  # of the replay, the last part
        used = {name.removeprefix("cmdstat_"): v["usec"] / 1e6 for name, v in stats.items()}
        needed = {name: used.get(name, 0.0) for name in NEEDED}
        budget = events / TARGET
        reading = walls["import geogate.cli.main"] + walls["the log read raw + msgpack.unpackb"]
        fixed = walls["import geogate.cli.main"] + walls["the log read raw + decode + projectors"]
        print("Redis' time in the replay's commands: " + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(
            used.items(), key=lambda kv: -kv[1]) if v >= 0.05))  # fmt: skip
        print(f"floor, Python, reading alone (import + raw read + unpack): {reading:.1f} s = "
              f"{reading / budget:.2f}× the target's budget")  # fmt: skip
        print(f"floor, Python, the parts a replay keeps (import + raw read + the schema's decode + the live path's "
              f"projectors): {fixed:.1f} s = {fixed / budget:.2f}× the target's budget")  # fmt: skip
        redis_floor = sum(needed.values())
        print(f"floor, Redis (the commands a rebuild needs: {', '.join(NEEDED)}): {redis_floor:.1f} s = "
              f"{redis_floor / budget:.2f}× the target's budget")  # fmt: skip
    finally:
        children.stop()


if __name__ == "__main__":
    main()
