"""Whatever ends a process that started Geogate's roles (a bench, `geogate dev`), none of them outlives it.

Seen before: a bench stopped from outside left its redis-server and four worker roles running an hour later.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import alive, descendants, free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]

# A bench's shape: the stack of bench/_stack.py (Redis, a prefork worker, a gateway), then the measuring.
BENCH_LIKE = """
import sys, time
sys.path.insert(0, "bench")
from _stack import geogate_stack
with geogate_stack(workers=1) as urls:
    print("ready", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_bench_ended_by_any_signal_leaves_no_process_behind(sig: signal.Signals) -> None:
    bench = subprocess.Popen(
        [sys.executable, "-c", BENCH_LIKE], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert bench.stdout is not None and bench.stdout.readline().strip() == "ready"
        started = descendants(bench.pid)
        commands = {_command(pid) for pid in started}
        assert any("redis-server" in c for c in commands) and any("workers" in c for c in commands), commands
        assert any("gateway" in c for c in commands), commands

        os.kill(bench.pid, sig)
        bench.wait(timeout=60)
        wait_for(lambda: not any(alive(pid) for pid in started), what="every started process to end", timeout_s=60)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
    if sig != signal.SIGKILL:
        assert bench.returncode == 128 + sig  # an orderly stop: `finally` ran and stopped the children


def test_geogate_dev_killed_outright_leaves_no_process_behind(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GEOGATE_REDIS_URL")}
    env |= {"GEOGATE_PORT": str(free_port()), "GEOGATE_DATA_DIR": str(tmp_path / ".geogate")}
    dev = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "dev", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert dev.stdout is not None and dev.stdout.readline().startswith("Geogate is up")
        started = descendants(dev.pid)
        assert len(started) >= 4, started  # redis and three worker roles, with their pool processes
        dev.kill()
        dev.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in started), what="every started process to end", timeout_s=60)
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGKILL)


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""
