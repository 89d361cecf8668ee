"""Loopback HTTP servers for the STAC tests: files served with `Range` support, each range counted (`RangeServer`),
and a proxy in front of a STAC API that answers 503 to its first requests (`FlakyProxy`)."""

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


@dataclass
class Served:
    """What a server answered: each request's path and, for a range, its `(start, end)` inclusive."""

    server: ThreadingHTTPServer
    requests: list[str] = field(default_factory=list)
    ranges: list[tuple[str, int, int]] = field(default_factory=list)
    whole: list[str] = field(default_factory=list)
    """Paths sent whole: a GET without a `Range`."""
    delay_s: float = 0.0
    """Held before each range's answer (a slow store, so that a call reading it can be caught running)."""
    redirect: str | None = None
    """A base URL the range requests of paths ending in `redirected`, but one-byte probes, are redirected to (a
    server that sends GDAL elsewhere)."""
    redirected: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def authority(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    @property
    def url(self) -> str:
        return f"http://{self.authority}"

    def bytes_read(self) -> int:
        return sum(end - start + 1 for _, start, end in self.ranges)


@contextmanager
def range_server(root: Path) -> Iterator[Served]:
    """Serve the files under `root`: `Range: bytes=a-b` answered 206 (counted), else 200 with the whole file."""
    served = Served(ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler))

    class Handler(_Quiet):
        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            with served.lock:
                served.requests.append(self.path)
            path = (root / self.path.split("?")[0].lstrip("/")).resolve()
            if not path.is_relative_to(root.resolve()) or not path.is_file():
                self._send(404, b"not found", {})
                return
            size = path.stat().st_size
            asked = _RANGE.fullmatch(self.headers.get("Range") or "")
            if asked is None:
                if body:
                    with served.lock:
                        served.whole.append(self.path)
                self._send(200, path.read_bytes() if body else b"", {"Accept-Ranges": "bytes"}, length=size)
                return
            start, end = int(asked[1]), min(int(asked[2] or size - 1), size - 1)
            time.sleep(served.delay_s)
            if served.redirect is not None and end > start and self.path.endswith(served.redirected):
                self._send(302, b"", {"Location": f"{served.redirect}{self.path}"})
                return
            with served.lock:
                served.ranges.append((self.path, start, end))
            headers = {"Content-Range": f"bytes {start}-{end}/{size}", "Accept-Ranges": "bytes"}
            self._send(206, _part(path, start, end) if body else b"", headers, length=end - start + 1)

    with _serving(served.server, Handler):
        yield served


def _part(path: Path, start: int, end: int) -> bytes:
    """Bytes `start` to `end` (inclusive) of the file, read alone (not the whole file for each range)."""
    with path.open("rb") as file:
        file.seek(start)
        return file.read(end - start + 1)


@dataclass
class Flaky:
    """A proxy's record: requests it answered 503 to, and those it passed on."""

    server: ThreadingHTTPServer
    failures_left: int
    fail_from: int | None = None
    """Every request from this one on (0-based) fails too."""
    failed: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def authority(self) -> str:
        return self.url.removeprefix("http://")


@contextmanager
def flaky_proxy(
    upstream: str, failures: int, *, fail_from: int | None = None, own_links: bool = True
) -> Iterator[Flaky]:
    """A reverse proxy to `upstream` that answers its first `failures` requests with 503, and every one from the
    `fail_from`th. Links in the answers name the proxy (the `Host` it was asked for is passed on), or with
    `own_links=False` the upstream."""
    flaky = Flaky(ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler), failures, fail_from)
    client = httpx.Client(base_url=upstream, timeout=30)

    class Handler(_Quiet):
        def do_GET(self) -> None:
            self._forward()

        def do_POST(self) -> None:
            self._forward()

        def _forward(self) -> None:
            with flaky.lock:
                seen = len(flaky.failed) + len(flaky.passed)
                fail = flaky.failures_left > 0 or (flaky.fail_from is not None and seen >= flaky.fail_from)
                flaky.failures_left -= fail
                (flaky.failed if fail else flaky.passed).append(f"{self.command} {self.path}")
            if fail:
                self._send(503, b'{"detail": "try again"}', {"Content-Type": "application/json"})
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Host"] = flaky.authority if own_links else httpx.URL(upstream).netloc.decode()
            answer = client.request(self.command, self.path, content=body, headers=headers)
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
            self._send(answer.status_code, answer.content, kept)

    try:
        with _serving(flaky.server, Handler):
            yield flaky
    finally:
        client.close()


@contextmanager
def redirector(target: str) -> Iterator[Served]:
    """A server that answers every request with a 302 to the same path on `target`."""
    served = Served(ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler))

    class Handler(_Quiet):
        def do_GET(self) -> None:
            served.requests.append(self.path)
            self._send(302, b"", {"Location": f"{target}{self.path}"})

    with _serving(served.server, Handler):
        yield served


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def _send(self, status: int, data: bytes, headers: dict[str, str], *, length: int | None = None) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def _serving(server: ThreadingHTTPServer, handler: type[BaseHTTPRequestHandler]) -> Iterator[None]:
    server.RequestHandlerClass = handler
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
