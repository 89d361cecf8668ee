"""The floor under each row of issue 17's table: the same work behind one Celery hop, with nothing of Geogate's.

`hop_stack(workers)` starts a Redis of its own; `workers` Celery worker nodes (prefork, one process each, as
`make run`'s gdal nodes, configured as Geogate's: acks late, prefetch 1, msgpack, no result backend) whose tasks run
Geogate's own job functions (`ping`, `raster_info`, `raster_reproject`) and XADD the result to one stream; and a
bare MCPServer whose tools LPUSH the task message (as Geogate's append does) and wait for the result with one shared
XREAD reader. No event log, no leases, no projections, no gate: what any design with one queue hop behind an MCP
server pays. `make bench` measures it beside Geogate and the baseline, in the same run, as each row's floor.
Usage: python bench/hop.py [--calls 300]   (ping through the hop against a bare MCPServer)
"""

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _stack import ROOT, _wait_http, bare_server, describe, processes

from eventlog.settings import Settings
from gateway.dev import free_port, start_redis

QUEUE = "hop"
OUTCOMES = "hop:outcomes"

HOP_APP = f"""
import os, socket
from pathlib import Path
import redis
from celery import Celery
from schemas.tools.core import PingResult
from schemas.tools.info import RasterInfoArgs
from schemas.tools.raster import RasterReprojectArgs
from workers.context import JobContext
from workers.gdal.info import raster_info as info_job
from workers.gdal.reproject import raster_reproject as reproject_job

app = Celery("hop", broker=os.environ["REDIS_URL"])
app.conf.update(
    task_acks_late=True, worker_prefetch_multiplier=1, task_ignore_result=True, result_backend=None,
    task_serializer="msgpack", accept_content=["msgpack"], worker_hijack_root_logger=False,
)
out = redis.Redis.from_url(os.environ["REDIS_URL"])
ROOTS = [Path(os.environ["WORKSPACE"])]


def reply(token, result):
    out.xadd("{OUTCOMES}", {{"token": token, "value": result.model_dump_json()}}, maxlen=10_000, approximate=True)


@app.task(name="hop.ping")
def ping(token, args):
    reply(token, PingResult(worker=f"{{socket.gethostname()}}:{{os.getpid()}}", queue="{QUEUE}", queue_wait_ms=0.0))


@app.task(name="hop.raster_info")
def raster_info(token, args):
    reply(token, info_job(RasterInfoArgs(**args), JobContext(call_id=token, roots=ROOTS)))


@app.task(name="hop.raster_reproject")
def raster_reproject(token, args):
    reply(token, reproject_job(RasterReprojectArgs(**args), JobContext(call_id=token, roots=ROOTS)))
"""

HOP_SERVER = f"""
import asyncio, os, uuid
import redis.asyncio as aredis
import uvicorn
from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from eventlog.celery_message import task_message
from schemas.tools.core import PingResult
from schemas.tools.info import RasterInfoResult
from schemas.tools.raster import RasterReprojectResult

mcp = MCPServer("hop")
client = aredis.Redis.from_url(os.environ["REDIS_URL"])
waiters = {{}}
reader = []


async def read_outcomes():
    last = "0-0"  # the stream is this stack's own and starts empty
    while True:
        for _, entries in await client.xread({{"{OUTCOMES}": last}}, block=1000, count=512) or ():
            for entry_id, fields in entries:
                last = entry_id
                waiter = waiters.pop(fields[b"token"].decode(), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(fields[b"value"])


async def hop(task, args):
    if not reader:
        reader.append(asyncio.get_running_loop().create_task(read_outcomes()))
    token = uuid.uuid4().hex
    waiters[token] = waiter = asyncio.get_running_loop().create_future()
    await client.lpush("{QUEUE}", task_message(task, "{QUEUE}", task_id=token, args=(token, args), argsrepr=task))
    try:
        return await asyncio.wait_for(waiter, 600)
    finally:
        waiters.pop(token, None)


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
async def ping(queue: str = "gdal", delay_ms: int = 0) -> PingResult:
    return PingResult.model_validate_json(await hop("hop.ping", {{}}))


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
async def raster_info(uri: str) -> RasterInfoResult:
    return RasterInfoResult.model_validate_json(await hop("hop.raster_info", {{"uri": uri}}))


@mcp.tool()
async def raster_reproject(
    uri: str, output: str, dst_crs: str, resampling: str = "nearest", overwrite: bool = False
) -> RasterReprojectResult:
    args = {{"uri": uri, "output": output, "dst_crs": dst_crs, "resampling": resampling, "overwrite": overwrite}}
    return RasterReprojectResult.model_validate_json(await hop("hop.raster_reproject", args))


uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
"""


@contextmanager
def hop_stack(workers: int = 2, workspace: Path | None = None) -> Iterator[str]:
    """Redis, `workers` one-process prefork Celery nodes and the hop server; yields the server's MCP URL."""
    with processes("the hop stack", "geogate-bench-hop-") as (children, data):
        url = start_redis(Settings(data_dir=data), children)
        (data / "hopapp.py").write_text(HOP_APP)
        env = {**os.environ, "REDIS_URL": url, "WORKSPACE": str(workspace or ROOT)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(data), str(ROOT), os.environ.get("PYTHONPATH")]))
        for n in range(workers):
            argv = [sys.executable, "-m", "celery", "-A", "hopapp", "worker", "-P", "prefork", "-c", "1", "-Q", QUEUE]
            argv += ["-l", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"hop{n}@%h"]
            children.spawn(argv, env, log=data / f"celery-{n}.log")
        port = free_port()
        children.spawn([sys.executable, "-c", HOP_SERVER], {**env, "PORT": str(port)}, log=data / "server.log")
        _wait_http(f"http://127.0.0.1:{port}/mcp")
        yield f"http://127.0.0.1:{port}/mcp"


def main() -> None:
    from overhead import timed_calls

    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    ns = parser.parse_args()

    async def both(hop: str, bare: str) -> tuple[list[float], list[float]]:
        return await timed_calls(hop, ns.calls), await timed_calls(bare, ns.calls)

    with hop_stack() as hop, bare_server() as bare:
        through_hop, direct = asyncio.run(both(hop, bare))
    print(f"bare MCPServer ping     {describe(direct)}")
    print(f"ping through one hop    {describe(through_hop)}")


if __name__ == "__main__":
    main()
