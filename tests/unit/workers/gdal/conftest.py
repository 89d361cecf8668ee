"""Data the GDAL job tests generate: rasters in several dtypes and CRSs, vector layers, and a job context."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import rasterio
import shapely
from affine import Affine

from workers.context import JobContext
from workers.errors import JobCancelled

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
