"""How docs/preview-dem.png was made: a synthetic DEM (ridges, valleys and a few summits on a 10 m UTM grid) shown
by the `raster_preview` job itself, as a hillshade.

Run from the repository: `.venv/bin/python docs/preview_dem.py`. The DEM is written to a temporary workspace; the
PNG is the tool's image content, byte for byte. With `--sizes` it prints instead the size each kind of picture
comes back at when 512 and 1024 px are asked for (the table in docs/gis-more.md): it must fit one image block.
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import rasterio
from rasterio.transform import from_origin

from schemas.tools.previews import RasterPreviewArgs
from workers.gdal.preview import raster_preview
from workers.jobkit.context import JobContext

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


def write(path: Path, data: np.ndarray) -> None:
    profile = {"driver": "GTiff", "width": data.shape[1], "height": data.shape[0], "count": 1, "dtype": data.dtype}
    transform = from_origin(500_000, 5_200_000, 10, 10)
    with rasterio.open(path, "w", **profile, crs="EPSG:32633", transform=transform) as dst:
        dst.write(data, 1)


def sizes(root: Path) -> None:
    rng = np.random.default_rng(1)
    write(root / "classes.tif", np.kron(rng.integers(1, 8, (45, 60)), np.ones((20, 20))).astype("uint8"))
    write(root / "noise.tif", rng.normal(0, 1, (900, 1200)).astype("float32"))
    ctx = JobContext(call_id="docs", roots=[root])
    for uri, mode, colormap in [
        ("dem.tif", "hillshade", "viridis"), ("dem.tif", "stretch", "gray"), ("dem.tif", "stretch", "terrain"),
        ("dem.tif", "stretch", "viridis"), ("classes.tif", "stretch", "viridis"), ("noise.tif", "stretch", "viridis"),
    ]:  # fmt: skip
        for size in (512, 1024):
            args = RasterPreviewArgs(uri=uri, mode=mode, colormap=colormap, max_size=size)
            result = raster_preview(args, ctx)
            shown = f"{result.width}x{result.height} {result.format} {result.quality or ''}"
            print(f"{uri} {mode} {colormap} {size}: {shown}, {result.image_bytes} bytes")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write(root / "dem.tif", synthetic_dem())
        if "--sizes" in sys.argv:
            sizes(root)
            return
        args = RasterPreviewArgs(uri="dem.tif", mode="hillshade", max_size=640)
        result = raster_preview(args, JobContext(call_id="docs", roots=[root]))
    OUT.write_bytes(result._image)
    print(f"{OUT}: {result.width}x{result.height}, {result.image_bytes} bytes, {result.hillshade}")


if __name__ == "__main__":
    main()
