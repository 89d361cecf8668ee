"""The floor under a Geogate call: what the same hop costs with Redis alone and with Celery alone, same run.

Geogate's added latency for `ping` (over a bare MCPServer, bench/overhead.py) holds one queue hop and a few
appends. This bench measures the parts it cannot do without, with nothing of Geogate's in the way:
- **Redis alone**: a PING round trip, and an XADD seen by a client blocked in XREAD (an outcome's wake-up);
- **Celery alone**: `send_task` to a worker whose task does one XADD, the client waiting in XREAD BLOCK (one hop
  and back, Celery configured as Geogate's: acks late, prefetch 1, msgpack, no result backend), per pool.
Then the same run measures Geogate's `ping` and the bare server, and prints how much of the added time the hop
explains. Usage: python bench/floor.py [--calls 400]
"""

import argparse
import asyncio
import os
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import redis
from _ping import interleaved
from _stack import ROOT, bare_server, describe, geogate_stack, percentile

from geogate.cli.dev import Children, start_redis
from geogate.settings import Settings

CELERY_APP = """
import redis
from celery import Celery

app = Celery("floor", broker="{url}")
app.conf.update(
    task_acks_late=True, worker_prefetch_multiplier=1, task_ignore_result=True, result_backend=None,
    task_serializer="msgpack", accept_content=["msgpack"], worker_hijack_root_logger=False,
)
client = redis.Redis.from_url("{url}")


@app.task(name="floor.echo")
def echo(token: str) -> None:
    client.xadd("floor:outcomes", {{"token": token}})
"""


def redis_alone(url: str, calls: int) -> dict[str, list[float]]:
    client, waiter = redis.Redis.from_url(url), redis.Redis.from_url(url)
    ping = []
    for _ in range(calls):
        began = time.perf_counter()
        client.ping()
        ping.append((time.perf_counter() - began) * 1000)
    return {"PING round trip": ping, "XADD -> XREAD wake": _wakes(client, waiter, calls)}


def _wakes(client: redis.Redis, waiter: redis.Redis, calls: int) -> list[float]:
    """One thread XADDs after the other blocked: the wake-up is the XREAD's return minus the XADD's start."""
    import threading

    samples, last = [], "0-0"
    client.delete("floor:wake")
    for _ in range(calls):
        stamp: list[float] = []

        def add(stamp: list[float] = stamp) -> None:
            time.sleep(0.002)  # the reader is blocked by then
            stamp.append(time.perf_counter())
            client.xadd("floor:wake", {"x": "1"})

        writer = threading.Thread(target=add)
        writer.start()
        got = waiter.xread({"floor:wake": last}, block=1000, count=1)
        samples.append((time.perf_counter() - stamp[0]) * 1000)
        last = got[0][1][-1][0].decode()
        writer.join()
    return samples


def celery_alone(url: str, pool: str, calls: int, children: Children, workdir: Path) -> list[float]:
    from celery import Celery

    (workdir / "floorapp.py").write_text(textwrap.dedent(CELERY_APP.format(url=url)))
    argv = [sys.executable, "-m", "celery", "-A", "floorapp", "worker", "-P", pool, "-c", "1", "-l", "WARNING"]
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"floor-{pool}@%h"]
    worker = children.spawn(argv, {**os.environ, "PYTHONPATH": str(workdir)}, log=workdir / f"celery-{pool}.log")
    app = Celery("floor", broker=url)
    app.conf.update(task_serializer="msgpack", accept_content=["msgpack"], task_ignore_result=True)
    client = redis.Redis.from_url(url)
    last = client.xrevrange("floor:outcomes", count=1)
    cursor = last[0][0].decode() if last else "0-0"
    samples = []
    try:
        for n in range(calls + 50):
            token = uuid.uuid4().hex
            began = time.perf_counter()
            app.send_task("floor.echo", args=[token])
            got = client.xread({"floor:outcomes": cursor}, block=30_000, count=1)
            if not got:
                raise SystemExit(f"the {pool} Celery worker did not answer; see {workdir}/celery-{pool}.log")
            cursor = got[0][1][-1][0].decode()
            if n >= 50:  # the first ones warm the worker up
                samples.append((time.perf_counter() - began) * 1000)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    ns = parser.parse_args()
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  cpus: {os.cpu_count()}")
    children, workdir = Children(), Path(tempfile.mkdtemp(prefix="geogate-floor-"))
    try:
        url = start_redis(Settings(data_dir=workdir), children)
        floors = redis_alone(url, ns.calls)
        for pool in ("prefork", "solo"):
            floors[f"Celery hop ({pool})"] = celery_alone(url, pool, ns.calls, children, workdir)
    finally:
        children.stop()
    with geogate_stack() as urls, bare_server() as bare:
        samples = asyncio.run(interleaved({"geogate": urls[0], "bare": bare}, ns.calls))
    ours, theirs = samples["geogate"], samples["bare"]
    for name, values in floors.items():
        print(f"{name:<24} {describe(values)}")
    print(f"{'bare MCPServer ping':<24} {describe(theirs)}")
    print(f"{'geogate ping':<24} {describe(ours)}  (make run's pools)")
    added = percentile(ours, 50) - percentile(theirs, 50)
    hop = percentile(floors["Celery hop (prefork)"], 50)
    print(f"geogate adds p50 {added:+.2f} ms over the bare server; a Celery hop alone (prefork) is {hop:.2f} ms:")
    own = added - hop
    print(f"  the hop is {hop / added:.0%} of it; Geogate's own part (appends, projections, reader) {own:.2f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
