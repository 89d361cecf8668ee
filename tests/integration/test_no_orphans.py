"""Whatever ends a process that started Geogate's roles (a bench, `geogate dev`), none of them outlives it.

Seen before: a bench stopped from outside left its redis-server and four worker roles running an hour later.
Every process the parent started is checked by pid and start time (a reused pid is another process), and every
session they ran in must be empty (what they forked later, reparented or not).
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import Proc, children, in_sessions, snapshot, still_running, tree
from tests.support import default_signals, free_port, redis_server, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# A bench's shape: `make run`'s stack (Redis, the worker pools with their sandboxes, a gateway) and a bare
# MCPServer from bench/_stack.py, one call with a result handler, then wrk loading the gateway.
BENCH_LIKE = """
import asyncio, sys
sys.path.insert(0, "bench")
from mcp import Client
from _stack import bare_server, geogate_stack
from throughput import wrk

async def warm(url):
    async with Client(url) as client:
        handler = {"language": "python", "script": "tool_output['pong']"}
        assert not (await client.call_tool("ping", {"result_handler": handler})).is_error

with geogate_stack() as urls, bare_server():
    asyncio.run(warm(urls[0]))
    print("ready", flush=True)
    wrk(urls[0], 600)
"""
BENCH_ROLES = [
    "redis-server",
    "-m workers --queues gdal",
    "-m workers --queues sandbox",
    "-m workers --queues llm",
    "-m gateway --port",
    "from mcp.server import MCPServer",
    "bwrap",
    "wrk ",
]
DEV_ROLES = ["redis-server", "-m workers --queues gdal", "-m workers --queues sandbox", "-m workers --queues llm"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_bench_ended_by_any_signal_leaves_no_process_behind(sig: signal.Signals, tmp_path: Path) -> None:
    with (tmp_path / "bench.log").open("w") as log:
        bench = subprocess.Popen(
            [sys.executable, "-c", BENCH_LIKE],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp_path)},  # what a killed bench cannot remove stays in pytest's tmp
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,
            preexec_fn=default_signals,
        )
    try:
        assert bench.stdout is not None and bench.stdout.readline().strip() == "ready", _tail(tmp_path / "bench.log")
        wait_for(lambda: _runs(bench.pid, "wrk "), what="the bench's load generator", timeout_s=30)
        started = tree(bench.pid)
        _assert_started(started, BENCH_ROLES)

        os.kill(bench.pid, sig)
        bench.wait(timeout=60)
        _assert_none_left(started, sessions={bench.pid} | {proc.session for proc in started})
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
    if sig in (signal.SIGTERM, signal.SIGHUP):
        assert bench.returncode == 128 + sig  # an orderly stop: `finally` ran and stopped the children
    elif sig == signal.SIGINT:
        assert bench.returncode == -sig  # Python unwinds KeyboardInterrupt through `finally`, then exits by SIGINT
    else:
        assert bench.returncode == -sig


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_geogate_dev_ended_by_any_signal_leaves_no_process_behind(sig: signal.Signals, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GEOGATE_REDIS_URL")}
    env |= {"GEOGATE_PORT": str(free_port()), "GEOGATE_DATA_DIR": str(tmp_path / ".geogate")}
    dev = subprocess.Popen(
        [sys.executable, "-m", "geogate.cli", "dev", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        preexec_fn=default_signals,
    )
    try:
        assert dev.stdout is not None and dev.stdout.readline().startswith("Geogate is up")
        wait_for(lambda: _runs(dev.pid, "bwrap"), what="the workers' sandboxes", timeout_s=60)
        started = tree(dev.pid)
        _assert_started(started, DEV_ROLES)

        os.kill(dev.pid, sig)
        dev.wait(timeout=60)
        _assert_none_left(started, sessions={dev.pid} | {proc.session for proc in started})
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGKILL)
    assert dev.returncode == (-sig if sig == signal.SIGKILL else 0)


def test_a_node_killed_as_its_pool_forks_leaves_no_pool_process(tmp_path: Path) -> None:
    """A machine lost as its worker starts: the node SIGKILLed the moment its pool processes exist, before they armed
    their parent-death signal (Celery arms it after the fork without checking the parent). Seen left running for good,
    holding each other's pipes open. Three nodes, each killed as its pool forks."""
    with redis_server(tmp_path) as url:
        env = {**os.environ, "GEOGATE_REDIS_URL": url, "GEOGATE_DATA_DIR": str(tmp_path / ".geogate")}
        argv = [sys.executable, "-m", "workers", "--queues", "sandbox", "--concurrency", "2", "--loglevel", "ERROR"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        for _ in range(3):
            node = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True, **quiet)
            try:
                pool = _pool_as_it_forks(node.pid, argv, size=2)
                os.kill(node.pid, signal.SIGKILL)
                node.wait(timeout=30)
                _assert_none_left(pool, sessions={node.pid})
            finally:
                if node.poll() is None:
                    os.killpg(node.pid, signal.SIGKILL)


def _pool_as_it_forks(node: int, argv: list[str], size: int, timeout_s: float = 60) -> list[Proc]:
    """The node's pool processes as soon as `size` of them exist: forks that run the node's own command line (a
    subprocess it starts soon runs another). Polled without sleeping: the window after a fork is a millisecond."""
    command = "\0".join(argv).encode() + b"\0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        forks = []
        for pid in children(node):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                if Path(f"/proc/{pid}/cmdline").read_bytes() == command:
                    forks.append(pid)
        if len(forks) >= size:
            table = snapshot()
            return [table[pid] for pid in forks if pid in table]
    raise TimeoutError(f"node {node} forked no pool of {size} in {timeout_s} s")


def _runs(pid: int, part: str) -> bool:
    return any(part in proc.command for proc in tree(pid))


def _assert_started(started: list[Proc], roles: list[str]) -> None:
    commands = " | ".join(proc.command for proc in started)
    missing = [role for role in roles if role not in commands]
    assert not missing, f"not started: {missing}; running: {commands}"


def _assert_none_left(started: list[Proc], sessions: set[int]) -> None:
    """Bounded waits (a stop takes a few seconds); on a timeout, the failure lists what is left."""
    try:
        wait_for(lambda: not still_running(started), what="every started process to end", timeout_s=60)
        wait_for(lambda: not in_sessions(sessions), what="their sessions to empty", timeout_s=30)
    except TimeoutError as exc:
        left = still_running(started) + in_sessions(sessions)
        for proc in left:  # the test failed; leave the machine as it found it
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        raise AssertionError(f"{exc}: {[(p.pid, p.command[:80]) for p in left]}") from None


def _tail(path: Path) -> str:
    return path.read_text()[-3000:]
