"""Micro-benchmark: `raster_reproject` job function vs the same warp done directly with rasterio (median ratio)."""

import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import rasterio
from affine import Affine
from rasterio.enums import Resampling
from rasterio.warp import calculate_default_transform, reproject

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.tools.raster import RasterReprojectArgs
from workers.gdal.outputs import file_ref
from workers.jobkit.context import JobContext
from workers.tools.raster import raster_reproject

SIZE, RUNS, DST_CRS = 2048, 9, "EPSG:3857"


def make_source(path: Path) -> None:
    """A 2048×2048 float32 GeoTIFF in EPSG:4326 with a smooth pattern (tiled, uncompressed)."""
    rows, cols = np.mgrid[0:SIZE, 0:SIZE].astype("float32")
    data = (np.sin(rows / 97.0) * np.cos(cols / 61.0) * 1000.0)[np.newaxis]
    profile = {"driver": "GTiff", "width": SIZE, "height": SIZE, "count": 1, "dtype": "float32", "crs": "EPSG:4326"}
    profile |= {"transform": Affine(0.0005, 0, 10.0, 0, -0.0005, 50.0), "tiled": True, "blockxsize": 256}
    with rasterio.open(path, "w", blockysize=256, **profile) as dst:
        dst.write(data)


def direct(src_path: Path, dst_path: Path) -> None:
    """The warp as a rasterio user would write it: default grid, one `reproject` call per band."""
    with rasterio.open(src_path) as src:
        transform, width, height = calculate_default_transform(src.crs, DST_CRS, src.width, src.height, *src.bounds)
        profile = src.profile | {"crs": DST_CRS, "transform": transform, "width": width, "height": height}
        with rasterio.open(dst_path, "w", **profile) as dst:
            for band in range(1, src.count + 1):
                reproject(rasterio.band(src, band), rasterio.band(dst, band), resampling=Resampling.bilinear)


def through_job(root: Path, name: str) -> None:
    args = RasterReprojectArgs(uri="src.tif", output=name, dst_crs=DST_CRS, resampling="bilinear", overwrite=True)
    raster_reproject(args, JobContext(call_id="bench", roots=[root]))


def _ms(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def interleaved_medians(a: Callable[[], None], b: Callable[[], None]) -> tuple[float, float]:
    """Median ms of `a` and of `b`, run alternately so that load from other processes hits both alike."""
    a(), b()  # warm GDAL's caches and PROJ's database once
    times = [(_ms(a), _ms(b)) for _ in range(RUNS)]
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def main() -> None:
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # rasterio 1.4 × affine 3 `*` operator
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_source(root / "src.tif")
        rasterio_ms, job_ms = interleaved_medians(
            lambda: direct(root / "src.tif", root / "direct.tif"), lambda: through_job(root, "job.tif")
        )
        sha_ms = statistics.median(_ms(lambda: file_ref(root / "job.tif", "GTiff")) for _ in range(RUNS))
    print(f"raster_reproject 2048×2048 float32 4326→3857 bilinear, median of {RUNS}")
    print(f"  rasterio direct   {rasterio_ms:8.1f} ms")
    print(f"  geogate job       {job_ms:8.1f} ms   (strips, atomic rename, sha256 of the output)")
    print(f"  of which sha256   {sha_ms:8.1f} ms   (the output's digest for the event log)")
    print(f"  ratio             {job_ms / rasterio_ms:8.2f}×   (target ≤ 1.1×)")


if __name__ == "__main__":
    main()
