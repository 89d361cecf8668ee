"""What `geogate dev` shows on its terminal when Ctrl-C stops it: a line that it stops, and a last one that it did."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import default_signals, free_port, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _listens(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_ctrl_c_prints_that_geogate_dev_stops_and_then_that_it_stopped(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "GEOGATE_REDIS_URL", "GEOGATE_WORKSPACES")}
    env |= {"GEOGATE_PORT": str(port), "GEOGATE_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    env |= {"COLUMNS": "80"}  # a narrow terminal: a log line would wrap over several
    dev = subprocess.Popen(
        [sys.executable, "-m", "geogate.cli", "dev", "--workers", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=default_signals,
    )
    try:
        wait_for(lambda: _listens(port), what="the gateway", timeout_s=60)
        os.kill(dev.pid, signal.SIGINT)
        out, _ = dev.communicate(timeout=60)
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGKILL)
    lines = out.splitlines()
    after_configs = lines[len(lines) - lines[::-1].index("}") :]  # what follows the client configs' last brace
    assert after_configs == ["stopping: the gateway, then the workers, then Redis", "Geogate stopped"], out
    assert dev.returncode == 0
