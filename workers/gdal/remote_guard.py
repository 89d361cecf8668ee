"""GDAL's HTTP goes to allowed hosts only: a loopback forward proxy per remote read that refuses every other host.

GDAL's curl follows redirects by itself (`CURLOPT_FOLLOWLOCATION` is set unconditionally in `cpl_http.cpp`, up to
10 hops, with no configuration option to turn it off, in GDAL 3.10 as in 3.12), so checking the redirect chain
before GDAL reads (`errors.check_remote`) cannot stop an allowed host from answering GDAL's own requests with a
redirect elsewhere. Every request GDAL makes for a remote read goes through `HostGuard` instead (`GDAL_HTTP_PROXY`,
`GDAL_HTTPS_PROXY`): a plain `http://` request arrives with its absolute URL and is forwarded only to an allowed
host; an `https://` one arrives as `CONNECT host:port` and is tunnelled only to an allowed host (TLS stays end to
end). A redirect to another host becomes GDAL's next request through the proxy, which answers it 403 and records
it; the read then fails `remote.not_allowed`, whatever GDAL made of the 403.

Written on the standard library's `http.server` and `http.client` (one request per connection, HTTP/1.0 towards
GDAL, so that curl cannot reuse a proxy connection for another host) rather than with a proxy package (proxy.py,
mitmproxy): those run processes or an event loop of their own beside the worker's, where this one starts and stops
inside the read, with the read's allow-list (its cost: docs/gis-more.md, bench/remote_guard.py).
"""

import contextlib
import http.client
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from workers.jobkit.errors import JobFailed
from workers.jobkit.files import RemoteRaster, allowed_host

# curl skips a configured proxy for the hosts `no_proxy` lists: with it, GDAL would reach them unguarded.
for _name in ("no_proxy", "NO_PROXY"):
    os.environ.pop(_name, None)
# Outside a guarded read, GDAL's HTTP (rasterio's and pyogrio's: a format naming a /vsicurl/ source) goes to a
# loopback port where nothing answers; a guarded read's own options take precedence over the environment.
UNGUARDED_PROXY = "127.0.0.1:9"
os.environ["GDAL_HTTP_PROXY"] = os.environ["GDAL_HTTPS_PROXY"] = UNGUARDED_PROXY

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "proxy-connection", "te", "trailer",
     "transfer-encoding", "upgrade"}
)  # fmt: skip
_CHUNK = 1 << 16


@contextlib.contextmanager
def guarded_read(remote: RemoteRaster, field: str = "uri") -> Iterator[dict[str, str | int]]:
    """The GDAL options of a read of `remote` (its `gdal_env`) whose every request goes through a `HostGuard`
    started for the block.

    Raises:
        JobFailed: `remote.not_allowed`, naming `field`, when the guard refused any request (GDAL was sent to a host
            off the list), whether the read then failed otherwise or not.
    """
    with HostGuard(remote.allowed, remote.timeout_s) as guard:
        try:
            yield remote.gdal_env() | guard.gdal_env()
        except JobFailed as exc:
            if guard.refused:
                raise _redirected(remote, guard.refused[0], field) from exc
            raise
        if guard.refused:
            raise _redirected(remote, guard.refused[0], field)


def _redirected(remote: RemoteRaster, target: str, field: str) -> JobFailed:
    return JobFailed(
        "remote.not_allowed",
        f"{field}: reading {remote.url!r}, GDAL was sent to {target!r}, whose host is not in GEOGATE_REMOTE_HOSTS",
        field=field,
    )


class HostGuard:
    """A loopback proxy forwarding requests to the hosts of `allowed` only (`host` or `host:port` entries, as
    `files.allowed_host` reads them); `refused` lists the URLs it turned away."""

    def __init__(self, allowed: frozenset[str], timeout_s: float) -> None:
        self.allowed = allowed
        self.timeout_s = timeout_s
        self.refused: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, name="remote-guard", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def gdal_env(self) -> dict[str, str]:
        """GDAL options sending every HTTP and HTTPS request of a read through this proxy."""
        return {"GDAL_HTTP_PROXY": self.address, "GDAL_HTTPS_PROXY": self.address}

    def _serve(self) -> None:
        """Accept until the listening socket is shut down (`serve_forever` would make the stop wait for its poll)."""
        with contextlib.suppress(OSError):
            while True:
                self._server.process_request(*self._server.get_request())  # a thread per connection

    def __enter__(self) -> "HostGuard":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._server.socket.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self._server.server_close()
        self._thread.join(timeout=1)  # a daemon: were accept not woken, it could not outlive the process

    def allows(self, url: str) -> bool:
        if allowed_host(url, self.allowed) is not None:
            return True
        self.refused.append(url)
        return False


def _handler(guard: HostGuard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._forward()

        def do_HEAD(self) -> None:
            self._forward()

        def do_CONNECT(self) -> None:
            if not guard.allows(f"https://{self.path}/"):
                self.send_error(403, "host not allowed")
                return
            host, _, port = self.path.rpartition(":")
            try:
                upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=guard.timeout_s)
            except (OSError, ValueError):
                self.send_error(502, "upstream unreachable")
                return
            self.send_response_only(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            _tunnel(self.connection, upstream)

        def _forward(self) -> None:
            if not guard.allows(self.path):
                self.send_error(403, "host not allowed")
                return
            try:
                reply, upstream = _request(self.command, self.path, self.headers.items(), guard.timeout_s)
            except (OSError, http.client.HTTPException):
                self.send_error(502, "upstream unreachable")
                return
            with contextlib.closing(upstream):
                self.send_response_only(reply.status, reply.reason)
                for name, value in reply.getheaders():
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Connection", "close")
                self.end_headers()
                shutil.copyfileobj(reply, self.wfile, _CHUNK)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def _request(
    method: str, url: str, headers: list[tuple[str, str]], timeout_s: float
) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
    upstream = kind(parts.hostname or "", parts.port, timeout=timeout_s)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    upstream.request(method, target, headers={k: v for k, v in headers if k.lower() not in _HOP_BY_HOP})
    return upstream.getresponse(), upstream


def _tunnel(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""

    def pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    upstream.close()
