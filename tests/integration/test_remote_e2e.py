"""Remote rasters through the real stack (gateway, Redis, Celery worker): an allowed host that sends GDAL elsewhere
is refused with nothing fetched from the other host, and a presigned URL reaches its server intact while nothing
on Redis keeps its secrets.

Two loopback HTTP servers stand for two hosts; only `allowed` is in GEOGATE_REMOTE_HOSTS. `allowed` serves a COG at
`/dem.tif`; at `/sly.tif` it answers the first request honestly (the worker's one-byte check) and every later one
with a 302 to `elsewhere`.
"""

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest
import rasterio
import rasterio.shutil
import redis
from affine import Affine

from tests.integration.conftest import start_gateway, start_worker, stop
from tests.mcp_http import call_tool, read_resource
from tests.support import free_port, redis_server

pytestmark = pytest.mark.integration

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
SIGNATURE = "9c2f4e6a8b0d1f3e5a7c9b1d3f5e7a9c0b2d4f6e8a1c3e5f7b9d0a2c4e6f8b1d"
SESSION = "FwoGZXIvYXdzEBYaDH-session-secret"


@dataclass
class Host:
    """A loopback server standing for one host; `paths` are the request targets it received."""

    server: ThreadingHTTPServer
    paths: list[str] = field(default_factory=list)

    @property
    def authority(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"


def _host(body: bytes, redirect_to: str | None = None) -> Host:
    host = Host(ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler))

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            host.paths.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

        def do_GET(self) -> None:
            host.paths.append(self.path)
            sly = [p for p in host.paths if p.startswith("/sly.tif")]
            if redirect_to is not None and self.path.startswith("/sly.tif") and len(sly) > 1:
                self.send_response(302)
                self.send_header("Location", f"{redirect_to}/dem.tif")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            asked = _RANGE.fullmatch(self.headers.get("Range") or "")
            if asked is None:  # GDAL asks a presigned URL's size by a GET (it may not allow HEAD)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            start, end = int(asked[1]), min(int(asked[2] or len(body) - 1), len(body) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
            self.send_header("Content-Length", str(end - start + 1))
            self.end_headers()
            self.wfile.write(body[start : end + 1])

        def log_message(self, format: str, *args: object) -> None:
            pass

    host.server.RequestHandlerClass = Handler
    threading.Thread(target=host.server.serve_forever, daemon=True).start()
    return host


@dataclass
class RemoteStack:
    url: str
    redis_url: str
    allowed: Host
    elsewhere: Host


def _cog(folder: Path) -> bytes:
    plain, cog = folder / "plain.tif", folder / "dem.tif"
    profile = {"driver": "GTiff", "width": 300, "height": 200, "count": 1, "dtype": "float32", "crs": "EPSG:4326"}
    with rasterio.open(plain, "w", transform=Affine(0.01, 0, 10, 0, -0.01, 47), **profile) as dst:
        dst.write(np.random.default_rng(3).normal(500, 50, (1, 200, 300)).astype("float32"))
    rasterio.shutil.copy(plain, cog, driver="COG", blocksize=256)
    return cog.read_bytes()


@pytest.fixture(scope="module")
def remote_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteStack]:
    workdir = tmp_path_factory.mktemp("remote")
    (workdir / "workspace").mkdir()
    body = _cog(workdir)
    elsewhere = _host(body)
    allowed = _host(body, redirect_to=f"http://{elsewhere.authority}")
    port = free_port()
    with redis_server(workdir) as redis_url:
        env = {
            **os.environ,
            "REDIS_URL": redis_url,
            "GEOGATE_WORKSPACES": str(workdir / "workspace"),
            "GEOGATE_REMOTE_HOSTS": allowed.authority,
            "GEOGATE_REMOTE_TIMEOUT_S": "10",
        }
        worker = start_worker(env, concurrency=1)
        gateway = start_gateway(env, port)
        try:
            yield RemoteStack(f"http://127.0.0.1:{port}/mcp", redis_url, allowed, elsewhere)
        finally:
            stop(gateway)
            stop(worker)
            for host in (allowed, elsewhere):
                host.server.shutdown()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=90) as client:
        yield client


def test_an_allowed_host_sending_gdal_elsewhere_is_refused_and_the_other_host_is_never_asked(
    remote_stack: RemoteStack, http: httpx.Client
) -> None:
    sly = f"http://{remote_stack.allowed.authority}/sly.tif"

    preview = call_tool(http, remote_stack.url, "raster_preview", {"uri": sly}).result
    resource = read_resource(http, remote_stack.url, f"metadata://{sly}/preview").message

    error = preview["structuredContent"]["error"]
    assert preview["isError"] and (error["code"], error["field"]) == ("remote.not_allowed", "uri"), error
    assert remote_stack.elsewhere.authority in error["message"]
    assert "error" in resource and remote_stack.elsewhere.authority in resource["error"]["message"], resource
    assert remote_stack.elsewhere.paths == []


def test_a_presigned_url_reaches_its_server_intact_and_nothing_on_redis_keeps_its_secrets(
    remote_stack: RemoteStack, http: httpx.Client
) -> None:
    query = f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={SIGNATURE}&token={SESSION}"
    url = f"http://{remote_stack.allowed.authority}/dem.tif?{query}"

    reply = call_tool(http, remote_stack.url, "raster_info", {"uri": url}).result

    assert not reply.get("isError"), reply["content"]
    assert (reply["structuredContent"]["width"], reply["structuredContent"]["height"]) == (300, 200)
    asked = [p for p in remote_stack.allowed.paths if p.startswith("/dem.tif")]
    assert asked and all(p == f"/dem.tif?{query}" for p in asked)
    assert SIGNATURE not in str(reply) and SESSION not in str(reply)
    stored = _everything_on(redis.Redis.from_url(remote_stack.redis_url))
    assert SIGNATURE.encode() not in stored and SESSION.encode() not in stored


def _everything_on(client: redis.Redis) -> bytes:
    """Every stream entry, hash, string, list, set and sorted set on the server, as one blob to search."""
    blob = b""
    for key in client.scan_iter():
        kind = client.type(key)
        if kind == b"stream":
            blob += repr(client.xrange(key)).encode()
        elif kind == b"hash":
            blob += repr(client.hgetall(key)).encode()
        elif kind == b"string":
            blob += client.get(key) or b""
        elif kind == b"list":
            blob += b"".join(client.lrange(key, 0, -1))
        elif kind == b"set":
            blob += repr(client.smembers(key)).encode()
        elif kind == b"zset":
            blob += repr(client.zrange(key, 0, -1)).encode()
    return blob
