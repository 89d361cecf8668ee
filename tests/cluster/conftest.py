"""The cluster as local processes: redis-server with AOF, two gateways, three workers, each in its own process group.

Faults are what production sees: a node's death is SIGKILL of a worker's whole process group (main process and
pool), a pause is SIGSTOP of the group past every timeout, Redis is SIGKILLed and restarted on its own data.
`GEOGATE_CHAOS=full` (what `make chaos` sets) runs the issue's full sizes; CI runs a short version.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rasterio
import redis
from rasterio.transform import from_origin

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from tests.integration.conftest import start_gateway, stop
from tests.support import free_port, wait_for

pytestmark = pytest.mark.cluster

FULL = os.environ.get("GEOGATE_CHAOS") == "full"


@dataclass(frozen=True)
class Load:
    """How much work a chaos test drives: calls, concurrency, faults, raster size."""

    calls: int
    concurrency: int
    faults: int
    raster_px: int


LOAD = Load(calls=100, concurrency=8, faults=3, raster_px=4096) if FULL else Load(36, 6, 2, 2048)


@dataclass
class RedisProcess:
    """A redis-server with AOF on a fixed port and folder, so it can be killed and started again on its own data."""

    port: int
    data: Path
    fsync: str = "everysec"
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data)]
        argv += ["--appendonly", "yes", "--appendfsync", self.fsync, "--save", "", "--maxmemory-policy", "noeviction"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._pings, what=f"redis-server on port {self.port}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def _pings(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis.RedisError:
            return False


@dataclass
class Cluster:
    redis: RedisProcess
    workspace: Path
    env: dict[str, str]
    gateways: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: Path | None = None

    def store(self) -> EventStore:
        return EventStore(redis.Redis.from_url(self.redis.url), Keys("geogate"))

    def add_gateway(self) -> str:
        port = free_port()
        proc = start_gateway({**self.env, "GEOGATE_PORT": str(port)}, port)
        url = f"http://127.0.0.1:{port}/mcp"
        self.gateways.append((url, proc))
        return url

    def add_worker(self, concurrency: int = 1) -> subprocess.Popen[bytes]:
        """A worker node in a process group of its own (`geogate worker`, defaults as a user runs it but for its
        pool's `concurrency`)."""
        n = len(self.workers)
        log = open(self.logs / f"worker{n}.log", "ab") if self.logs else subprocess.DEVNULL  # noqa: SIM115
        argv = [sys.executable, "-m", "workers", "--queues", "gdal,sandbox,llm,workflow", "--name", f"w{n}@%h"]
        argv += ["--concurrency", str(concurrency)]
        proc = subprocess.Popen(argv, env=self.env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(proc)
        wait_for(lambda: self.lease_of(proc.pid) is not None, what=f"worker {n} to take its lease", timeout_s=60)
        return proc

    def lease_of(self, pid: int) -> str | None:
        """The lease id a worker node holds (its id starts with `host:pid:`)."""
        for key in self.store().redis.scan_iter(match="geogate:lease:*"):
            lease = key.decode().removeprefix("geogate:lease:")
            if lease.split(":")[1] == str(pid):
                return lease
        return None

    def signal_node(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        """`sig` to the node's whole process group: main process and pool alike."""
        os.killpg(proc.pid, sig)
        if sig == signal.SIGKILL:
            proc.wait()

    def node_holding(self, lease: str) -> subprocess.Popen[bytes] | None:
        return next((p for p in self.workers if p.poll() is None and lease.split(":")[1] == str(p.pid)), None)

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                with_cont(proc)
                stop(proc)
        for _url, proc in self.gateways:
            stop(proc)


def with_cont(proc: subprocess.Popen[bytes]) -> None:
    """A stopped group must be continued before it can act on SIGTERM."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGCONT)


def write_raster(path: Path, px: int) -> None:
    data = np.random.default_rng(7).random((px, px), dtype="float32")
    profile = {"driver": "GTiff", "width": px, "height": px, "count": 1, "dtype": "float32", "tiled": True}
    profile |= {"crs": "EPSG:32633", "transform": from_origin(500000, 4100000, 10, 10)}
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data, 1)


@pytest.fixture(scope="session")
def raster_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chaos-rasters")
    write_raster(root / "big.tif", LOAD.raster_px)
    return root


def make_cluster(
    tmp_path: Path, raster_dir: Path, *, gateways: int = 2, workers: int = 3, env_extra: dict[str, str] | None = None
) -> Cluster:
    data = tmp_path / "redis"
    data.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.link(raster_dir / "big.tif", workspace / "big.tif")  # a hard link: a symlink out of the workspace is refused
    node = RedisProcess(free_port(), data)
    node.start()
    env = {**os.environ, "REDIS_URL": node.url, "GEOGATE_WORKSPACES": str(workspace), "GEOGATE_LOG_LEVEL": "WARNING"}
    env |= env_extra or {}
    logs = tmp_path / "logs"
    logs.mkdir()
    cluster = Cluster(node, workspace, env, logs=logs)
    for _ in range(workers):
        cluster.add_worker()
    for _ in range(gateways):
        cluster.add_gateway()
    return cluster


@contextlib.contextmanager
def running_cluster(tmp_path: Path, raster_dir: Path, **kwargs: Any) -> Iterator[Cluster]:
    """`make_cluster(...)`, stopped with its Redis however the block ends."""
    built = make_cluster(tmp_path, raster_dir, **kwargs)
    try:
        yield built
    finally:
        built.stop()
        if built.redis.proc is not None and built.redis.proc.poll() is None:
            built.redis.kill()


@pytest.fixture
def cluster(tmp_path: Path, raster_dir: Path) -> Iterator[Cluster]:
    with running_cluster(tmp_path, raster_dir) as built:
        yield built


def monotonic_ms() -> float:
    return time.time() * 1000
