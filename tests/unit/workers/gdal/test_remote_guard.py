"""The host guard GDAL's remote reads go through: an HTTPS tunnel (`CONNECT`) is opened to allowed hosts only, and
outside a guarded read GDAL reaches no host at all.

Plain HTTP and HTTPS through the guard, redirects included, are tested with GDAL itself in test_remote.py; curl sends
HTTPS through a proxy as `CONNECT host:port`, tested here with a socket speaking for curl and a TCP echo server.
"""

import socket
import socketserver
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pyogrio
import pytest
import rasterio
from rasterio.errors import RasterioIOError

from tests.unit.workers.gdal.conftest import ServerFactory
from workers.gdal.remote_guard import HostGuard


class _Echo(socketserver.BaseRequestHandler):
    accepted: ClassVar[list[int]]

    def handle(self) -> None:
        self.accepted.append(1)
        while data := self.request.recv(1024):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[tuple[str, list[int]]]:
    accepted: list[int] = []
    handler = type("Echo", (_Echo,), {"accepted": accepted})
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"127.0.0.1:{server.server_address[1]}", accepted
        server.shutdown()


def _connect(guard: HostGuard, authority: str) -> tuple[bytes, socket.socket]:
    host, port = guard.address.split(":")
    client = socket.create_connection((host, int(port)), timeout=5)
    client.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += client.recv(1)
    return head.split(b"\r\n", 1)[0], client


def test_a_tunnel_to_an_allowed_host_relays_both_ways(echo: tuple[str, list[int]]) -> None:
    authority, accepted = echo

    with HostGuard(frozenset({authority}), timeout_s=5) as guard:
        status, client = _connect(guard, authority)
        with client:
            client.sendall(b"ping")
            assert client.recv(4) == b"ping"

    assert status.split()[1] == b"200" and accepted == [1] and guard.refused == []


def test_a_tunnel_to_a_host_off_the_list_is_refused_before_any_connection(echo: tuple[str, list[int]]) -> None:
    authority, accepted = echo

    with HostGuard(frozenset({"127.0.0.1:1", "tiles.example.org"}), timeout_s=5) as guard:
        status, client = _connect(guard, authority)
        client.close()

    assert status.split()[1] == b"403" and accepted == []
    assert guard.refused == [f"https://{authority}/"]


def test_outside_a_guarded_read_neither_gdal_reaches_any_host(cog: Path, serve: ServerFactory) -> None:
    """A format that names a `/vsicurl/` source (pyogrio's GDALG, a VRT) would make GDAL fetch it by itself: without
    a guard's options, both GDALs (rasterio's and pyogrio's) send it to a loopback port where nothing answers."""
    served = serve(cog)

    with pytest.raises(RasterioIOError):
        rasterio.open(f"/vsicurl/{served.url}")
    with pytest.raises(pyogrio.errors.DataSourceError), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pyogrio's own notice of the HTTP failure
        pyogrio.read_info(f"/vsicurl/{served.url}")

    assert served.requests == []
