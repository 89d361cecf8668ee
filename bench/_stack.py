"""Bench support: start a private Geogate stack (redis, workers, gateway) and a bare MCPServer, as processes."""

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from geogate.cli.dev import Children, free_port, start_redis, worker_pools  # noqa: E402
from geogate.settings import Settings  # noqa: E402

BARE_SERVER = """
import os, socket, uvicorn
from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from schemas.tools.core import PingResult
mcp = MCPServer("bare")
WORKER = f"{socket.gethostname()}:{os.getpid()}"
@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def ping(queue: str = "gdal", delay_ms: int = 0) -> PingResult:
    return PingResult(worker=WORKER, queue="in-process", queue_wait_ms=0.0)
uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
"""


def _wait_http(url: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up within {timeout_s:g} s")


class Urls(list[str]):
    """The gateways' MCP URLs, and the stack's Redis (`redis`) for benches that read the log."""

    redis: str = ""


@contextmanager
def processes(what: str, prefix: str) -> Iterator[tuple[Children, Path]]:
    """Children to spawn and a scratch folder for their data and logs; on the way out every child is stopped, and
    the folder removed, or kept (and named) when the block failed (an orderly stop by signal is no failure)."""
    children, failed = Children(), False
    data = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield children, data
    except Exception:
        failed = True
        raise
    finally:
        children.stop()
        if failed:
            print(f"{what}'s logs are kept in {data}", file=sys.stderr)
        else:
            shutil.rmtree(data, ignore_errors=True)


@contextmanager
def geogate_stack(
    workers: int = 2,
    pool: str | None = None,
    gateways: int = 1,
    workspace: Path | None = None,
    env: dict[str, str] | None = None,
    tree: Path | None = None,
) -> Iterator[Urls]:
    """Redis + worker nodes + `gateways` gateway processes; yields the MCP URLs (and the Redis URL).

    `tree` is the checkout whose code every role runs (default: this one). It is each role's working directory as
    well as its PYTHONPATH: `python -m` puts the working directory ahead of PYTHONPATH, so a role started from
    another checkout's folder would run that checkout's code whatever PYTHONPATH says.

    With no `pool`, the worker nodes are those of `geogate dev --workers N` (`make run`): the pools per queue of
    `geogate.cli.dev.worker_pools`. With a `pool`, `workers` nodes of that pool serve every queue (to compare pools).
    `workspace` is the one workspace root (the repository when omitted); `env` adds settings for every role.
    """
    with processes("the stack", "geogate-bench-") as (children, data):
        url = start_redis(Settings(data_dir=data), children)
        code = (tree or ROOT).resolve()
        base = {**os.environ, "REDIS_URL": url, "GEOGATE_WORKSPACES": str(workspace or ROOT), **(env or {})}
        base["GEOGATE_LOG_LEVEL"], base["PYTHONPATH"] = "WARNING", str(code)
        nodes = worker_pools(workers) if pool is None else [(f"b{n}", ["--pool", pool]) for n in range(workers)]
        for name, argv in nodes:
            command = [sys.executable, "-m", "workers", *argv, "--loglevel", "WARNING", "--name", f"{name}@%h"]
            children.spawn(command, base, log=data / f"worker-{name}.log", cwd=code)
        urls = Urls()
        urls.redis = url
        for _ in range(gateways):
            port = free_port()
            children.spawn(
                [sys.executable, "-m", "geogate.cli", "gateway", "--port", str(port)],
                {**base, "GEOGATE_PORT": str(port)},
                log=data / f"gateway-{port}.log",
                cwd=code,
            )
            _wait_http(f"http://127.0.0.1:{port}/health")
            urls.append(f"http://127.0.0.1:{port}/mcp")
        yield urls


@contextmanager
def bare_server() -> Iterator[str]:
    """A bare `MCPServer` serving the same `ping` in-process over HTTP, as its own process (its log in a temp dir)."""
    children = Children()
    port, logs = free_port(), Path(tempfile.mkdtemp(prefix="geogate-bench-bare-"))
    try:
        env = {**os.environ, "PORT": str(port), "PYTHONPATH": str(ROOT)}
        children.spawn([sys.executable, "-c", BARE_SERVER], env, log=logs / "bare.log")
        _wait_http(f"http://127.0.0.1:{port}/mcp")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        children.stop()
        shutil.rmtree(logs, ignore_errors=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def describe(values: list[float]) -> str:
    return f"p50 {statistics.median(values):.2f} ms  p99 {percentile(values, 99):.2f} ms  (n={len(values)})"
