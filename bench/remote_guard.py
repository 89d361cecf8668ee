"""What the host guard (`workers.gdal.remote_guard`) costs a remote COG read: the same reads through `/vsicurl/`
straight to a loopback range server and through the guard, alternated, median ratio.

Two reads: the whole band of a 2048² float32 COG (deflate, 512² blocks: 16 blocks plus the header), and a 512-pixel
decimated read (from an overview, as `raster_preview` reads). Each run reads a fresh URL (`?run=N`), so GDAL's
`/vsicurl/` cache never answers for the network. Loopback is the worst case for the guard: no network latency hides
its extra hop. Usage: python bench/remote_guard.py [--runs 15]
"""

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import rasterio
import rasterio.shutil
from affine import Affine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.gdal.remote_guard import guarded_read
from workers.jobkit.files import RemoteRaster

SIZE = 2048
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


def make_cog(folder: Path) -> bytes:
    rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype("float32")
    data = (np.sin(rows / 97.0) * np.cos(cols / 61.0) * 1000.0)[np.newaxis]
    plain, cog = folder / "plain.tif", folder / "dem.tif"
    profile = {"driver": "GTiff", "width": SIZE, "height": SIZE, "count": 1, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(plain, "w", transform=Affine(10, 0, 500_000, 0, -10, 5_000_000), **profile) as dst:
        dst.write(data)
    rasterio.shutil.copy(plain, cog, driver="COG", blocksize=512, compress="DEFLATE")
    return cog.read_bytes()


def serve(body: bytes) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

        def do_GET(self) -> None:
            asked = _RANGE.fullmatch(self.headers.get("Range") or "")
            start, end = (int(asked[1]), min(int(asked[2] or len(body) - 1), len(body) - 1)) if asked else (0, 0)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
            self.send_header("Content-Length", str(end - start + 1))
            self.end_headers()
            self.wfile.write(body[start : end + 1])

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


def whole(src: rasterio.DatasetReader) -> None:
    src.read(1)


def decimated(src: rasterio.DatasetReader) -> None:
    src.read(1, out_shape=(512, 512))


def direct(remote: RemoteRaster, read: Callable[[rasterio.DatasetReader], None]) -> None:
    unproxied = {"GDAL_HTTP_PROXY": "", "GDAL_HTTPS_PROXY": ""}  # importing the guard points GDAL at a dead port
    with rasterio.Env(**remote.gdal_env(), **unproxied), rasterio.open(remote.gdal_path, driver="GTiff") as src:
        read(src)


def guarded(remote: RemoteRaster, read: Callable[[rasterio.DatasetReader], None]) -> None:
    with guarded_read(remote) as env, rasterio.Env(**env), rasterio.open(remote.gdal_path, driver="GTiff") as src:
        read(src)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        server, host = serve(make_cog(Path(folder)))
    counter = iter(range(10**9))
    for name, read in (("whole band", whole), ("512-pixel preview", decimated)):
        times: dict[str, list[float]] = {"direct": [], "guarded": []}
        for _ in range(runs):
            for label, way in (("direct", direct), ("guarded", guarded)):
                remote = RemoteRaster(f"http://{host}/dem.tif?run={next(counter)}", frozenset({host}))
                began = time.perf_counter()
                way(remote, read)
                times[label].append((time.perf_counter() - began) * 1000)
        base, ours = statistics.median(times["direct"]), statistics.median(times["guarded"])
        print(f"{name:<18} direct p50 {base:7.1f} ms  guarded p50 {ours:7.1f} ms  ratio {ours / base:.2f}x")
    server.shutdown()


if __name__ == "__main__":
    main()
