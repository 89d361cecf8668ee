"""Keys and bytes one finished call leaves in Redis: N `ping`-shaped calls (requested, started, succeeded) appended
through the store's own append path (dedupe keys, projections, the aggregate index, as in production), the ops
summary caught up, then the keyspace's growth per call (DBSIZE, INFO used_memory) and MEMORY USAGE of one call's
keys by family.

Usage: python bench/keys_per_call.py [--calls 5000]
"""

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _events import make_event

from geogate.calls import ops_feed
from geogate.calls.keys import Keys, outcome_key, requested_key, started_key
from geogate.calls.store import EventStore
from geogate.cli.dev import Children, start_redis
from geogate.eventlog.store import sync_client
from geogate.settings import Settings
from schemas.events import ToolRequested, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate, new_id

WEEK_S = 7 * 86400


def one_call(store: EventStore) -> str:
    call_id = new_id()
    agg = call_aggregate(call_id)
    for data, key in (
        (ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=60), requested_key),
        (ToolStarted(call_id=call_id, worker="w:1", attempt="a1", queue_wait_ms=2.0), None),
        (ToolSucceeded(call_id=call_id, result={"pong": True}, duration_ms=1.0, worker="w:1"), outcome_key),
    ):
        dedupe = key(call_id) if key else started_key(call_id, "a1")
        store.append(make_event(agg, data), dedupe)
    return call_id


def family(keys: Keys, key: str) -> str:
    """`call`, `idx`, `dedupe`, `log:calls`, `ops`, … (the part after the prefix and namespace)."""
    rest = key.removeprefix(keys.prefix + ":")
    parts = rest.split(":")
    if parts[0] == "p":
        return f"projection {parts[1]}"
    return ":".join(parts[:2]) if parts[0] == "log" else parts[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    calls = parser.parse_args().calls
    data, children = Path(tempfile.mkdtemp(prefix="geogate-bench-keys-")), Children()
    try:
        client = sync_client(start_redis(Settings(data_dir=data), children))
        keys = Keys("geogate", finished_ttl_s=WEEK_S)
        store = EventStore(client, keys, dedupe_ttl_s=WEEK_S)
        one_call(store)  # the shared keys (metrics, streams, ops summary) exist before counting
        ops_feed.catch_up(client, keys)
        size, used = client.dbsize(), int(client.info("memory")["used_memory"])
        made = [one_call(store) for _ in range(calls)]
        ops_feed.catch_up(client, keys)
        size_after, used_after = client.dbsize(), int(client.info("memory")["used_memory"])
        mine = [k.decode() for k in client.scan_iter(match=f"*{made[-1]}*", count=1000)]
        usage = Counter({family(keys, k): int(client.memory_usage(k, samples=0) or 0) for k in mine})
        count = Counter(family(keys, k) for k in mine)
    finally:
        children.stop()
        shutil.rmtree(data, ignore_errors=True)
    print(f"{calls:,} finished calls, 3 events each")
    print(f"keys per finished call: {(size_after - size) / calls:.2f} (DBSIZE growth)")
    print(f"bytes per finished call: {(used_after - used) / calls:,.0f} (INFO used_memory growth, the log included)")
    for name in sorted(usage):
        print(f"  one call's {name}: {count[name]} key(s), {usage[name]:,} bytes (MEMORY USAGE)")


if __name__ == "__main__":
    main()
