"""The real stack for integration tests: redis-server (session-private), Celery worker processes, gateway on HTTP."""

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx
import numpy as np
import pyogrio.raw
import pytest
import rasterio
import redis
import shapely
from rasterio.transform import from_origin

from geogate.calls.keys import Keys, celery_queue_keys
from geogate.calls.store import EventStore
from schemas.routes import QUEUES
from tests.llm_server import ScriptedServer, scripted_server
from tests.support import free_port, wait_for

pytestmark = pytest.mark.integration


@dataclass
class Stack:
    redis_url: str
    url: str
    workspace: Path
    env: dict[str, str]
    worker: subprocess.Popen[bytes]

    def store(self) -> EventStore:
        return EventStore(redis.Redis.from_url(self.redis_url), Keys("geogate"))


def write_rasters(root: Path) -> None:
    data = np.arange(64 * 32, dtype="float32").reshape(1, 32, 64)
    profile = {
        "driver": "GTiff",
        "width": 64,
        "height": 32,
        "count": 1,
        "dtype": "float32",
        "crs": "EPSG:32633",
        "transform": from_origin(500000, 4100000, 30, 30),
        "nodata": -9999.0,
    }
    with rasterio.open(root / "dem.tif", "w", **profile) as dst:
        dst.write(data)


def write_vectors(root: Path) -> None:
    points = shapely.points(np.arange(5.0), np.arange(5.0))
    pyogrio.raw.write(
        root / "points.gpkg",
        geometry=shapely.to_wkb(points),
        field_data=[np.arange(5)],
        fields=["n"],
        geometry_type="Point",
        crs="EPSG:4326",
        driver="GPKG",
        layer="points",
    )


def start_gateway(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "geogate.cli", "gateway", "--port", str(port)]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
    wait_for(lambda: _healthy(f"http://127.0.0.1:{port}/health"), what="gateway /health")
    return proc


def start_worker(
    env: dict[str, str], concurrency: int = 2, log: IO[bytes] | None = None, level: str = "WARNING"
) -> subprocess.Popen[bytes]:
    """A worker node on the test's Redis; its output goes to `log` when given (a test reads it back)."""
    argv = [sys.executable, "-m", "workers", "--concurrency", str(concurrency), "--loglevel", level]
    return subprocess.Popen(argv, env=env, start_new_session=True, stdout=log, stderr=log)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM) if _own_group(proc) else proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _own_group(proc: subprocess.Popen[bytes]) -> bool:
    try:
        return os.getpgid(proc.pid) == proc.pid
    except ProcessLookupError:
        return False


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="session")
def llm_server() -> Iterator[ScriptedServer]:
    """The scripted OpenAI-compatible server the workers' `ask` job talks to; each test loads its own replies."""
    with scripted_server() as server:
        yield server


LLM_ENV = {
    "GEOGATE_LLM_API_KEY": "test-key",
    "GEOGATE_LLM_MODEL": "gemma3:4b",
    "GEOGATE_LLM_BACKOFF_RETRIES": "0",
    "GEOGATE_LLM_BLOCKED_TOOLS": "*_simplify",
    "GEOGATE_LLM_RATE_LIMIT_PER_MINUTE": "100",
}
"""The LLM host's settings for the `ask` job (the model's server is `llm_server`)."""


@pytest.fixture(scope="session")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory, llm_server: ScriptedServer) -> Iterator[Stack]:
    workspace = tmp_path_factory.mktemp("workspace")
    write_rasters(workspace)
    write_vectors(workspace)
    port = free_port()
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "GEOGATE_WORKSPACES": str(workspace),
        "GEOGATE_PORT": str(port),
        "GEOGATE_VISIBILITY_TIMEOUT_S": "30",
        # the large warps here test the whole job; tiled jobs have their own tests (tests/cluster/test_tiles.py)
        "GEOGATE_TILE_MIN_PIXELS": str(1 << 27),
        "GEOGATE_LLM_BASE_URL": llm_server.base_url,
        "GEOGATE_TOOLSETS": "all",  # the suite calls every tool, workflows' and admin's included
        **LLM_ENV,
    }
    queued = redis.Redis.from_url(redis_url)
    leftovers = {q: n for q in QUEUES if (n := sum(queued.llen(key) for key in celery_queue_keys(q)))}
    assert not leftovers, f"messages an earlier test left on the session Redis's queues: {leftovers}"  # else run here
    worker = start_worker(env)
    gateway = start_gateway(env, port)
    try:
        yield Stack(redis_url, f"http://127.0.0.1:{port}/mcp", workspace, env, worker)
    finally:
        stop(gateway)
        stop(worker)


@pytest.fixture
def stack_env(stack: Stack) -> dict[str, str]:
    return dict(stack.env)
