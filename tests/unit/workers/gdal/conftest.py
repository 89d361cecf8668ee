"""Data the GDAL job tests generate: rasters in several dtypes and CRSs, vector layers, a job context, and loopback
HTTP(S) servers for remote rasters."""

import datetime
import ipaddress
import re
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import rasterio
import rasterio.shutil
import shapely
from affine import Affine
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobCancelled

RasterFactory = Callable[..., Path]
VectorFactory = Callable[..., Path]

# A grid per CRS: origin (left, top) and pixel size in that CRS's units.
GRIDS: dict[str, tuple[float, float, float]] = {
    "EPSG:4326": (10.0, 50.0, 0.01),
    "EPSG:3857": (1_113_194.0, 6_446_275.0, 500.0),
    "EPSG:32633": (500_000.0, 5_540_000.0, 100.0),
}


def ramp(height: int, width: int, dtype: str, count: int = 1) -> np.ndarray:
    """A deterministic pattern that covers the dtype's useful range (varied, so stats are not trivial)."""
    rows, cols = np.mgrid[0:height, 0:width]
    bands = [((rows * 7 + cols * 3 + b * 11) % 200 - (50 if dtype != "uint8" else 0)) for b in range(count)]
    data = np.stack(bands).astype("float64")
    if dtype.startswith("float"):
        data = data * 0.37
    return data.astype(dtype)


@pytest.fixture
def ctx(tmp_path: Path) -> JobContext:
    return JobContext(call_id="test-call", roots=[tmp_path])


CancelledAtLastReport = Callable[[Callable[[str, JobContext], object]], None]


@pytest.fixture
def cancelled_at_last_report(tmp_path: Path) -> CancelledAtLastReport:
    """Check that `run(output, ctx)` cancelled with its last progress report leaves nothing in the workspace: one run
    to a scratch output counts its reports (then the scratch output is removed), a second run is told it was
    cancelled at the last one and must raise `JobCancelled` with the workspace as it was."""

    def check(run: Callable[[str, JobContext], object]) -> None:
        reports: list[float] = []
        run("counted.tif", JobContext(call_id="count", roots=[tmp_path], sink=lambda p, t, m: bool(reports.append(p))))
        (tmp_path / "counted.tif").unlink()
        before, seen = sorted(p.name for p in tmp_path.iterdir()), []
        last = lambda p, t, m: bool(seen.append(p)) or len(seen) == len(reports)  # noqa: E731
        with pytest.raises(JobCancelled):
            run("out.tif", JobContext(call_id="c", roots=[tmp_path], sink=last))
        assert len(seen) == len(reports) > 0
        assert sorted(p.name for p in tmp_path.iterdir()) == before

    return check


@pytest.fixture
def make_raster(tmp_path: Path) -> RasterFactory:
    def make(
        name: str = "src.tif",
        *,
        dtype: str = "float32",
        crs: str = "EPSG:4326",
        data: np.ndarray | None = None,
        nodata: float | None = None,
        size: tuple[int, int] = (64, 96),
        count: int = 1,
    ) -> Path:
        array = data if data is not None else ramp(size[0], size[1], dtype, count)
        array = array if array.ndim == 3 else array[np.newaxis]
        left, top, res = GRIDS[crs]
        path = tmp_path / name
        profile = {"driver": "GTiff", "dtype": array.dtype.name, "count": array.shape[0], "crs": crs}
        profile |= {
            "height": array.shape[1],
            "width": array.shape[2],
            "transform": Affine(res, 0.0, left, 0.0, -res, top),
        }
        with rasterio.open(path, "w", nodata=nodata, **profile) as dst:
            dst.write(array)
        return path

    return make


def squares(n: int = 6, size: float = 0.1, origin: tuple[float, float] = (10.0, 49.0)) -> list[shapely.Geometry]:
    """`n` squares in a row, each `size` wide, one `size` apart."""
    x0, y0 = origin
    return [shapely.box(x0 + 2 * i * size, y0, x0 + (2 * i + 1) * size, y0 + size) for i in range(n)]


@pytest.fixture
def make_vector(tmp_path: Path) -> VectorFactory:
    def make(
        name: str = "src.gpkg",
        geoms: list[shapely.Geometry] | None = None,
        *,
        crs: str = "EPSG:4326",
        driver: str | None = None,
    ) -> Path:
        geoms = geoms if geoms is not None else squares()
        path = tmp_path / name
        ids = np.arange(len(geoms), dtype="int64")
        names = np.array([f"f{i}" for i in range(len(geoms))], dtype=object)
        wkb = np.array(shapely.to_wkb(geoms), dtype=object)
        geometry_type = shapely.get_type_id(geoms[0]) if geoms else None
        kind = {0: "Point", 1: "LineString", 3: "Polygon", 6: "MultiPolygon"}.get(geometry_type, "Unknown")
        pyogrio.raw.write(path, wkb, [ids, names], ["id", "name"], driver=driver, geometry_type=kind, crs=crs)
        return path

    return make


# --- remote rasters: loopback HTTP(S) servers that record what they are asked -----------------------------------

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@dataclass
class Served:
    url: str
    host: str
    requests: list[tuple[str, str | None, int]] = field(default_factory=list)
    """(method, Range header, status) of every request."""
    paths: list[str] = field(default_factory=list)
    """The request target (path and query) of every request, as received."""


def _handler(
    body: bytes, served: Served, ranges: bool, redirect: str | None, honest: int
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _redirected(self) -> bool:
            if redirect is None or len(served.requests) < honest:
                return False
            served.requests.append((self.command, self.headers.get("Range"), 302))
            self.send_response(302)
            self.send_header("Location", redirect)
            self._send(b"")
            return True

        def do_HEAD(self) -> None:
            served.paths.append(self.path)
            if self._redirected():
                return
            served.requests.append(("HEAD", self.headers.get("Range"), 200))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes" if ranges else "none")
            self.end_headers()

        def do_GET(self) -> None:
            served.paths.append(self.path)
            if self._redirected():
                return
            asked = _RANGE.fullmatch(self.headers.get("Range") or "")
            if ranges and asked:
                start = int(asked.group(1))
                end = min(int(asked.group(2) or len(body) - 1), len(body) - 1)
                served.requests.append(("GET", self.headers["Range"], 206))
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
                self._send(body[start : end + 1])
                return
            served.requests.append(("GET", self.headers.get("Range"), 200))
            self.send_response(200)
            self._send(body)

        def _send(self, data: bytes) -> None:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def cog(make_raster: RasterFactory, tmp_path: Path) -> Path:
    """A 700×500 float COG in EPSG:4326 with nodata, overviews and 256-pixel blocks, outside the workspace root."""
    rng = np.random.default_rng(8)
    data = rng.normal(100, 15, (500, 700)).astype("float32")
    data[:50, :80] = -9999
    src = make_raster("plain.tif", data=data, nodata=-9999, crs="EPSG:4326")
    out = tmp_path.parent / f"{tmp_path.name}-served" / "dem.tif"
    out.parent.mkdir()
    rasterio.shutil.copy(src, out, driver="COG", blocksize=256, compress="DEFLATE")
    return out


ServerFactory = Callable[..., Served]


@pytest.fixture
def serve() -> Iterator[ServerFactory]:
    servers: list[ThreadingHTTPServer] = []

    def start(
        path: Path,
        *,
        ranges: bool = True,
        redirect: str | None = None,
        honest: int = 0,
        tls: ssl.SSLContext | None = None,
    ) -> Served:
        """Serve `path` (over HTTPS with `tls`); with `redirect`, every request after the first `honest` ones is
        answered 302 to it."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        host = f"127.0.0.1:{server.server_address[1]}"
        served = Served(f"{'https' if tls else 'http'}://{host}/{path.name}", host)
        server.RequestHandlerClass = _handler(path.read_bytes(), served, ranges, redirect, honest)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return served

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A server context with a self-signed certificate for 127.0.0.1, trusted by curl and httpx for the test."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem, key_pem = tmp_path.parent / f"{tmp_path.name}-cert.pem", tmp_path.parent / f"{tmp_path.name}-key.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    monkeypatch.setenv("GDAL_CURL_CA_BUNDLE", str(pem))  # GDAL's curl (rasterio sets CURL_CA_BUNDLE itself)
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))  # httpx, for the one-byte check
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pem, key_pem)
    return context
