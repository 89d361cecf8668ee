"""Test support shared by unit and integration tests: a private redis-server, free ports, event builders."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from geogate.eventlog.keys import all_categories
from geogate.process.lifetime import dies_with_this_process
from schemas.events import Event, EventData
from schemas.ids import new_id

if TYPE_CHECKING:
    from mcp.types import CreateMessageResult

    from geogate.calls.store import EventStore
    from geogate.settings import Settings


def default_signals() -> None:
    """A `preexec_fn`: the stop signals at their defaults in the child, as a command typed at a terminal has them.

    A test run started with `nohup`, or as a shell's background job, ignores SIGHUP or SIGINT, and every process it
    starts inherits that. A bench keeps either ignored, and `geogate dev` SIGHUP (rightly: `nohup` asks for it), so a
    test that stops a child by such a signal starts the child with this."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server(workdir: Path, port: int | None = None) -> Iterator[str]:
    """A real redis-server on a free port (never 6379), or on `port` (a free one, to start a server again where one
    was), stopped afterwards. Fails loudly when not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed; `make test` installs it with apt")
    port = port or free_port()
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
    ]
    # it ends with this process even when pytest is killed and no `finally` runs (from the main thread only: the
    # signal follows the thread that started it)
    orphan_guard = dies_with_this_process(signal.SIGTERM)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=orphan_guard)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_for(lambda: _pings(url), what=f"redis-server on port {port}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _pings(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url).ping())
    except redis.ConnectionError:
        return False


def wait_for(condition, *, what: str, timeout_s: float = 20.0, interval_s: float = 0.02) -> None:
    """Poll `condition` until true; raise naming `what` after `timeout_s` (a bound, never an assertion of speed).

    Only for what gives no event to wait on (a process listening, a process gone); log waits use `wait_for_log`.
    """
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval_s)


def wait_for_log(store: "EventStore", condition: Callable[[], bool], *, what: str, timeout_s: float = 20.0) -> None:
    """Re-check `condition` each time the log grows (XREAD BLOCK on every stream); raise after `timeout_s`."""
    streams = [store.keys.stream(c) for c in all_categories()]
    cursors = {s: (e[0][0].decode() if (e := store.redis.xrevrange(s, count=1)) else "0-0") for s in streams}
    deadline = time.monotonic() + timeout_s
    while not condition():
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"timed out waiting for {what}")
        # at most 2 s per block: the client's socket timeout (5 s) must not cut a quiet stretch of the log short
        for stream, entries in store.redis.xread(cursors, block=max(1, int(min(left, 2.0) * 1000))) or []:
            cursors[stream.decode()] = entries[-1][0].decode()


def wait_for_key(
    client: redis.Redis, key: str, condition: Callable[[], bool], *, what: str, timeout_s: float = 20
) -> None:
    """Re-check `condition` each time Redis changes `key` (keyspace notifications, switched on here for hashes, sorted
    sets and generic commands: only on a Redis of the test's own); raise after `timeout_s`."""
    client.config_set("notify-keyspace-events", "Khgz")
    db = client.connection_pool.connection_kwargs.get("db", 0)
    with client.pubsub(ignore_subscribe_messages=True) as changes:
        changes.subscribe(f"__keyspace@{db}__:{key}")  # before the first check: no change falls between the two
        deadline = time.monotonic() + timeout_s
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"timed out waiting for {what}")
            changes.get_message(timeout=min(left, 2.0))


def make_event(aggregate: str, data: EventData, *, actor: str = "tester", trace_id: str = "trace") -> Event:
    return Event(id=new_id(), aggregate=aggregate, ts=datetime.now(UTC), trace_id=trace_id, actor=actor, data=data)


JUSTIFICATION = {
    "intent": "test data warped onto another grid",
    "alternatives": [{"method": "keep the source CRS", "why_not": "the test checks a reprojection"}],
    "choice": {"method": "the requested one", "rationale": "what the test asks for", "tradeoffs": "none that matter"},
    "confidence": "high",
}


async def justify(context: object, params: object) -> "CreateMessageResult":
    """A sampling callback that answers the preflight gate's justification requests with a valid JSON."""
    from mcp.types import CreateMessageResult, TextContent

    text = TextContent(type="text", text=json.dumps(JUSTIFICATION))
    return CreateMessageResult(role="assistant", content=text, model="scripted", stop_reason="endTurn")


def descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split()
    parent = {int(c): int(p) for c, p in zip(out[::2], out[1::2], strict=True)}
    found, frontier = [], [pid]
    while frontier:
        here = frontier.pop()
        kids = [c for c, p in parent.items() if p == here]
        found += kids
        frontier += kids
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def drain_queue(store: "EventStore", settings: "Settings", queue: str = "gdal", *, limit: int = 10_000) -> int:
    """Run every message on `queue` in this process, in the broker's order (kombu pops from the right), including
    what the runs enqueue; returns how many ran. The log and projections are real; Celery is left out."""
    from geogate.calls.keys import celery_queue_keys
    from geogate.queue.message import envelope_args
    from workers.run.runner import run_call

    def take() -> bytes | None:  # as a worker's BRPOP over the queue's priority lists
        return next((raw for key in celery_queue_keys(queue) if (raw := store.redis.rpop(key)) is not None), None)

    ran = 0
    while ran < limit and (raw := take()) is not None:
        args = envelope_args(json.loads(raw)) or ()
        run_call(store, settings, f"host:{ran % 2}", args[0], dispatch=int(args[1]))  # type: ignore[arg-type]
        ran += 1
    return ran
