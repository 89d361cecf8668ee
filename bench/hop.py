"""The floor under each row of `make bench`'s table: the same work behind one Celery hop, with nothing of Geogate's.

`hop_stack(workers)` starts a Redis of its own; `workers` Celery worker nodes (prefork, one process each, as
`make run`'s gdal nodes, configured as Geogate's: acks late, prefetch 1, msgpack, no result backend) whose tasks run
Geogate's own job functions (`ping`, `raster_info`, `raster_reproject`) and XADD the result to one stream; and a
bare MCPServer whose tools LPUSH the task message (as Geogate's append does) and wait for the result with one shared
XREAD reader. No event log, no leases, no projections, no gate: what any design with one queue hop behind an MCP
server pays. `make bench` measures it beside Geogate and the baseline, in the same run, as each row's floor.
Usage: python bench/hop.py [--calls 300]   (ping through the hop, with and without the log, against a bare MCPServer)
"""

import argparse
import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _ping import interleaved
from _stack import ROOT, _wait_http, bare_server, describe, processes

from geogate.cli.dev import free_port, start_redis
from geogate.settings import Settings

QUEUE = "hop"
OUTCOMES = "hop:outcomes"

HOP_APP = f"""
import os, socket
from pathlib import Path
import redis
from celery import Celery
from schemas.tools.core import PingResult
from schemas.tools.raster import RasterInfoArgs
from schemas.tools.raster import RasterReprojectArgs
from workers.jobkit.context import JobContext
from workers.tools.raster import raster_info as info_job
from workers.tools.raster import raster_reproject as reproject_job

app = Celery("hop", broker=os.environ["REDIS_URL"])
app.conf.update(
    task_acks_late=True, worker_prefetch_multiplier=1, task_ignore_result=True, result_backend=None,
    task_serializer="msgpack", accept_content=["msgpack"], worker_hijack_root_logger=False,
)
out = redis.Redis.from_url(os.environ["REDIS_URL"])
ROOTS = [Path(os.environ["WORKSPACE"])]
LOGGED = os.environ.get("HOP_LOG") == "1"
if LOGGED:
    import uuid
    from _hoplog import appender, started, succeeded
    append = appender(out)


def reply(token, result):
    out.xadd("{OUTCOMES}", {{"token": token, "value": result.model_dump_json()}}, maxlen=10_000, approximate=True)


def hop_task(job):
    # with HOP_LOG=1: a fenced start, the job, a fenced outcome (the log's writes); else the job and one XADD

    def task(token, args):
        if not LOGGED:
            return reply(token, job(token, args))
        attempt = uuid.uuid4().hex
        if append(token, "tool.started", {{"attempt": attempt}}, started(token, attempt)) == 1:
            result = job(token, args)
            append(token, "tool.succeeded", {{"result": result.model_dump(mode="json")}}, succeeded(token, attempt))

    return task


def ping_job(token, args):
    return PingResult(worker=f"{{socket.gethostname()}}:{{os.getpid()}}", queue="{QUEUE}", queue_wait_ms=0.0)


ping = app.task(name="hop.ping")(hop_task(ping_job))
raster_info = app.task(name="hop.raster_info")(
    hop_task(lambda token, args: info_job(RasterInfoArgs(**args), JobContext(call_id=token, roots=ROOTS)))
)
raster_reproject = app.task(name="hop.raster_reproject")(
    hop_task(lambda token, args: reproject_job(RasterReprojectArgs(**args), JobContext(call_id=token, roots=ROOTS)))
)
"""

HOP_SERVER = f"""
import asyncio, os, uuid
import redis.asyncio as aredis
import uvicorn
from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from geogate.queue.message import queue_message
from schemas.tools.core import PingResult
from schemas.tools.raster import RasterInfoResult
from schemas.tools.raster import RasterReprojectResult

mcp = MCPServer("hop")
client = aredis.Redis.from_url(os.environ["REDIS_URL"])
waiters = {{}}
reader = []
LOGGED = os.environ.get("HOP_LOG") == "1"
if LOGGED:
    from _hoplog import STREAM, async_appender, outcome, requested
    append = async_appender(client)


def _entry(fields):
    # (token, result) of an outcome: JSON text from the one-hop stream, a map from the logged hop's log
    if LOGGED:
        return outcome(fields)
    return fields[b"token"].decode(), fields[b"value"]


async def read_outcomes():
    last = "0-0"  # the stream is this stack's own and starts empty
    stream = STREAM if LOGGED else "{OUTCOMES}"
    while True:
        for _, entries in await client.xread({{stream: last}}, block=1000, count=512) or ():
            for entry_id, fields in entries:
                last = entry_id
                found = _entry(fields)
                waiter = waiters.pop(found[0], None) if found else None
                if waiter is not None and not waiter.done():
                    waiter.set_result(found[1])


async def hop(task, args):
    if not reader:
        reader.append(asyncio.get_running_loop().create_task(read_outcomes()))
    token = uuid.uuid4().hex
    waiters[token] = waiter = asyncio.get_running_loop().create_future()
    message = queue_message(task, "{QUEUE}", task_id=token, args=(token, args), argsrepr=task)
    if LOGGED:
        await append(token, "tool.requested", {{"tool": task, "args": args}}, requested(token, "{QUEUE}", message))
    else:
        await client.lpush("{QUEUE}", message)
    try:
        return await asyncio.wait_for(waiter, 600)
    finally:
        waiters.pop(token, None)


def result(model, value):
    return model.model_validate_json(value) if isinstance(value, bytes) else model.model_validate(value)


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
async def ping(queue: str = "gdal", delay_ms: int = 0) -> PingResult:
    return result(PingResult, await hop("hop.ping", {{}}))


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
async def raster_info(uri: str) -> RasterInfoResult:
    return result(RasterInfoResult, await hop("hop.raster_info", {{"uri": uri}}))


@mcp.tool()
async def raster_reproject(
    uri: str, output: str, dst_crs: str, resampling: str = "nearest", overwrite: bool = False
) -> RasterReprojectResult:
    args = {{"uri": uri, "output": output, "dst_crs": dst_crs, "resampling": resampling, "overwrite": overwrite}}
    return result(RasterReprojectResult, await hop("hop.raster_reproject", args))


uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
"""


class HopUrl(str):
    """The hop server's MCP URL; `redis` is the hop's own Redis (where the logged hop's log is read)."""

    redis: str = ""


@contextmanager
def hop_stack(workers: int = 2, workspace: Path | None = None, *, logged: bool = False) -> Iterator[HopUrl]:
    """Redis, `workers` one-process prefork Celery nodes and the hop server; yields the server's MCP URL.

    `logged`: each call also makes the event log's three appends (bench/_hoplog.py), the server waiting on the log.
    """
    with processes("the hop stack", "geogate-bench-hop-") as (children, data):
        url = start_redis(Settings(data_dir=data), children)
        (data / "hopapp.py").write_text(HOP_APP)
        env = {**os.environ, "REDIS_URL": url, "WORKSPACE": str(workspace or ROOT), "HOP_LOG": "1" if logged else ""}
        paths = [str(data), str(ROOT), str(ROOT / "bench"), os.environ.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        for n in range(workers):
            argv = [sys.executable, "-m", "celery", "-A", "hopapp", "worker", "-P", "prefork", "-c", "1", "-Q", QUEUE]
            argv += ["-l", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"hop{n}@%h"]
            children.spawn(argv, env, log=data / f"celery-{n}.log")
        port = free_port()
        children.spawn([sys.executable, "-c", HOP_SERVER], {**env, "PORT": str(port)}, log=data / "server.log")
        _wait_http(f"http://127.0.0.1:{port}/mcp")
        mcp_url = HopUrl(f"http://127.0.0.1:{port}/mcp")
        mcp_url.redis = url
        yield mcp_url


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    ns = parser.parse_args()
    with hop_stack() as hop, hop_stack(logged=True) as logged, bare_server() as bare:
        samples = asyncio.run(interleaved({"bare": bare, "hop": hop, "logged": logged}, ns.calls))
    print(f"bare MCPServer ping             {describe(samples['bare'])}")
    print(f"ping through one hop            {describe(samples['hop'])}")
    print(f"ping through one hop + the log  {describe(samples['logged'])}")


if __name__ == "__main__":
    main()
