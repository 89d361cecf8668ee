"""Inputs that ask a worker for far more than they weigh, small on disk: sparse GeoTIFFs of huge grids, a
checkerboard, far-apart pixels, layers of many zones. Unit and integration tests of the call bounds share them."""

from pathlib import Path

import numpy as np
import pyogrio.raw
import rasterio
import shapely
from rasterio.transform import from_origin

UTM = "EPSG:32633"
ORIGIN = (500_000.0, 5_600_000.0)
"""Top-left corner of every grid here, in `UTM` metres."""


def sparse_raster(path: Path, width: int, height: int, *, dtype: str = "uint8", res: float = 1.0) -> Path:
    """A `width`×`height` GeoTIFF with no block written (`SPARSE_OK`): a few hundred KB for any size GDAL reads as
    zeros."""
    tiled = {"tiled": True, "blockxsize": 256, "blockysize": 256} if min(width, height) >= 256 else {}
    profile = {"driver": "GTiff", "width": width, "height": height, "count": 1, "dtype": dtype, "crs": UTM}
    profile |= {"transform": from_origin(*ORIGIN, res, res), "sparse_ok": True, "bigtiff": "YES", **tiled}
    with rasterio.open(path, "w", **profile):
        pass
    return path


def write_band(path: Path, data: np.ndarray) -> Path:
    """A one-band GeoTIFF of `data` on a 1 m grid at `ORIGIN`."""
    height, width = data.shape
    profile = {"driver": "GTiff", "width": width, "height": height, "count": 1, "dtype": data.dtype.name, "crs": UTM}
    with rasterio.open(path, "w", **profile, transform=from_origin(*ORIGIN, 1.0, 1.0)) as dst:
        dst.write(data, 1)
    return path


def checkerboard(path: Path, side: int, *, dtype: str = "uint8") -> Path:
    """A `side`² raster of alternating 0 and 1: `side`² polygons, about `side`²/2 contour lines at 0.5."""
    return write_band(path, (np.indices((side, side)).sum(axis=0) % 2).astype(dtype))


def pixel(path: Path, left: float, top: float, *, res: float = 1.0) -> Path:
    """A 1×1 raster with its corner at (`left`, `top`)."""
    profile = {"driver": "GTiff", "width": 1, "height": 1, "count": 1, "dtype": "uint8", "crs": UTM}
    with rasterio.open(path, "w", **profile, transform=from_origin(left, top, res, res)) as dst:
        dst.write(np.ones((1, 1, 1), dtype="uint8"))
    return path


def layer(path: Path, geoms: list[shapely.Geometry]) -> Path:
    """A GeoPackage layer of `geoms` (polygons), with an `id` column."""
    wkb = np.array(shapely.to_wkb(geoms), dtype=object)
    ids = np.arange(len(geoms), dtype="int64")
    pyogrio.raw.write(path, wkb, [ids], ["id"], geometry_type="Polygon", crs=UTM)
    return path


def square(size: float) -> shapely.Geometry:
    """A `size`-metre square at `ORIGIN`'s corner."""
    left, top = ORIGIN
    return shapely.box(left, top - size, left + size, top)


def zones(count: int, *, size: float = 2.0) -> list[shapely.Geometry]:
    """`count` squares of `size` metres in a row of rows, over the first 100 m × … of the grids above."""
    left, top = ORIGIN
    return [
        shapely.box(
            left + (i % 50) * size, top - (i // 50 + 1) * size, left + (i % 50 + 1) * size, top - (i // 50) * size
        )
        for i in range(count)
    ]
