"""How docs/preview-dem.png was made: a synthetic DEM (ridges, valleys and a few summits on a 10 m UTM grid) shown
by the `raster_preview` job itself, as a hillshade.

Run from the repository: `.venv/bin/python docs/preview_dem.py`. The DEM is written to a temporary workspace; the
PNG is the tool's image content, byte for byte.
"""

import tempfile
from pathlib import Path

import numpy as np
import rasterio
from rasterio.transform import from_origin

from schemas.tools.analysis import RasterPreviewArgs
from workers.context import JobContext
from workers.gdal.preview import raster_preview

OUT = Path(__file__).with_name("preview-dem.png")


def synthetic_dem(height: int = 900, width: int = 1200, seed: int = 32) -> np.ndarray:
    """Elevations in metres: a tilted plateau, sine ridges and gaussian summits."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype("float64")
    z = 400 + 0.25 * x + 120 * np.sin(x / 90 + np.sin(y / 140)) * np.cos(y / 110)
    z += 12 * np.sin(x / 23 + 2 * np.cos(y / 47)) * np.sin(y / 31 + np.sin(x / 60))
    for _ in range(30):
        cx, cy, r, h = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(25, 140), rng.uniform(100, 700)
        z += h * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r**2))
    return z.astype("float32")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        dem = synthetic_dem()
        profile = {"driver": "GTiff", "width": dem.shape[1], "height": dem.shape[0], "count": 1, "dtype": "float32"}
        with rasterio.open(
            root / "dem.tif", "w", **profile, crs="EPSG:32633", transform=from_origin(500_000, 5_200_000, 10, 10)
        ) as dst:
            dst.write(dem, 1)
        args = RasterPreviewArgs(uri="dem.tif", mode="hillshade", max_size=640)
        result = raster_preview(args, JobContext(call_id="docs", roots=[root]))
    OUT.write_bytes(result._png)
    print(f"{OUT}: {result.width}x{result.height}, {result.png_bytes} bytes, {result.hillshade}")


if __name__ == "__main__":
    main()
