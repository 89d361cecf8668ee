"""Memory per job: a job's blow-up fails its own call after one start, and the worker goes on taking calls.

A private Redis, one worker node with one pool process, and a gateway. The blow-up is real: statistics of a 16384²
raster (a sparse file of a few KB) read whole, about 2 GiB of arrays. Either the pool process's address-space cap
(`GEOGATE_JOB_MEMORY_MB`) stops it, or, with no cap, the kernel's OOM killer does, in a memory cgroup of 700 MB
that the node runs in (as a container's limit would).
"""

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import rasterio
import redis
from rasterio.transform import from_origin

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from schemas.events import Event, ToolFailed
from schemas.ids import call_aggregate, new_id
from tests.integration.conftest import start_gateway, stop
from tests.mcp_http import call_tool
from tests.support import free_port, redis_server

pytestmark = pytest.mark.integration

LIMIT_MB = 1024
CGROUP_MB = 700
CGROUPS_V1 = Path("/sys/fs/cgroup/memory")


@dataclass
class Limited:
    url: str
    store: EventStore

    def call(self, client: httpx.Client, tool: str, args: dict[str, object]) -> dict[str, object]:
        return call_tool(client, self.url, tool, args).result

    def events(self, reply: dict[str, object]) -> list[Event]:
        return self.store.read_aggregate(call_aggregate(reply["_meta"]["io.geogate/call"]["call_id"]))  # type: ignore[index]


def write_sparse(path: Path, side: int) -> None:
    """A `side`² byte raster with no block written: a small file that reads as `side`² zeros."""
    profile = {"driver": "GTiff", "width": side, "height": side, "count": 1, "dtype": "uint8", "tiled": True}
    profile |= {"sparse_ok": True, "compress": "deflate", "crs": "EPSG:32633"}
    with rasterio.open(path, "w", transform=from_origin(500000, 4100000, 10, 10), **profile):
        pass


@contextlib.contextmanager
def stack(tmp_path: Path, memory_mb: int, prefix: list[str]) -> Iterator[Limited]:
    """The stack, its worker node started through `prefix` (a command that then runs the rest)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_sparse(workspace / "huge.tif", 16384)
    with redis_server(tmp_path) as redis_url:
        port = free_port()
        env = {**os.environ, "REDIS_URL": redis_url, "GEOGATE_WORKSPACES": str(workspace), "GEOGATE_PORT": str(port)}
        env |= {"GEOGATE_JOB_MEMORY_MB": str(memory_mb), "GEOGATE_TILE_MIN_PIXELS": str(1 << 40)}  # read whole
        argv = [*prefix, sys.executable, "-m", "workers", "--concurrency", "1", "--loglevel", "WARNING"]
        worker = subprocess.Popen(argv, env=env, start_new_session=True)
        gateway = start_gateway(env, port)
        try:
            yield Limited(f"http://127.0.0.1:{port}/mcp", EventStore(redis.Redis.from_url(redis_url), Keys("geogate")))
        finally:
            stop(gateway)
            stop(worker)


@contextlib.contextmanager
def memory_cgroup(limit_mb: int) -> Iterator[Path]:
    """A memory cgroup (v1) of `limit_mb`, removed afterwards; skips where this process cannot make one."""
    group = CGROUPS_V1 / f"geogate-test-{new_id()[-8:]}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"no memory cgroup to run the worker in ({exc}): needs root and cgroup v1's memory controller")
    try:
        (group / "memory.limit_in_bytes").write_text(str(limit_mb << 20))
        yield group
    finally:
        for _ in range(50):  # its processes have been stopped; the kernel lets the group go once they are reaped
            with contextlib.suppress(OSError):
                group.rmdir()
                break


def pong_worker(client: httpx.Client, limited: Limited) -> str:
    reply = limited.call(client, "ping", {})
    assert not reply.get("isError"), reply
    return str(reply["structuredContent"]["worker"])  # type: ignore[index]


def failure(reply: dict[str, object]) -> tuple[object, object]:
    assert reply["isError"], reply
    error = reply["structuredContent"]["error"]  # type: ignore[index]
    return error["code"], error["retryable"]


def test_a_job_past_the_memory_limit_fails_its_call_once_and_the_same_process_takes_the_next_call(
    tmp_path: Path,
) -> None:
    with stack(tmp_path, LIMIT_MB, []) as limited, httpx.Client(timeout=120) as client:
        before = pong_worker(client, limited)

        reply = limited.call(client, "raster_stats", {"uri": "huge.tif"})
        after = pong_worker(client, limited)

        assert failure(reply) == ("job.out_of_memory", False)
        assert after == before  # the same pool process answered before and after
        events = limited.events(reply)
        assert [e.type for e in events].count("tool.started") == 1  # failed at once: not tried again
        assert events[-1].payload(ToolFailed).details == {"limit_mb": LIMIT_MB}


def test_a_job_whose_process_the_oom_killer_ends_fails_its_call_after_one_start(tmp_path: Path) -> None:
    with memory_cgroup(CGROUP_MB) as group:
        join = ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh"]
        with stack(tmp_path, 0, join) as limited, httpx.Client(timeout=120) as client:
            before = pong_worker(client, limited)

            reply = limited.call(client, "raster_stats", {"uri": "huge.tif"})
            after = pong_worker(client, limited)

            assert failure(reply) == ("job.out_of_memory", False)
            assert after != before  # the killed pool process was replaced
            events = limited.events(reply)
            assert [e.type for e in events].count("tool.started") == 1  # failed at once: not tried again
            assert events[-1].payload(ToolFailed).details == {"killed": "oom", "worker": before, "limit_mb": 0}
