"""Reference layers the vector analysis tests write and compute against: polygons with holes, multipolygons, an
invalid ring, points on boundaries, crossing lines, in a projected CRS (EPSG:32633) and a geographic one."""

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import geopandas as gpd
import pyogrio
import pytest
import shapely

from geogate.settings import LimitSettings, Settings
from workers.jobkit.context import JobContext

UTM = "EPSG:32633"
X0, Y0 = 500_000.0, 5_540_000.0
"""An origin inside UTM zone 33N: reference layers are drawn in metres from it."""

Write = Callable[..., Path]


def box(x0: float, y0: float, x1: float, y1: float) -> shapely.Polygon:
    return shapely.box(X0 + x0, Y0 + y0, X0 + x1, Y0 + y1)


def at(x: float, y: float) -> shapely.Point:
    return shapely.Point(X0 + x, Y0 + y)


@pytest.fixture
def ctx(tmp_path: Path) -> JobContext:
    return JobContext(call_id="test-call", roots=[tmp_path])


def bounded(root: Path, **limits: int) -> JobContext:
    settings = Settings(redis_url="redis://unused", workspaces=str(root), limits=LimitSettings(**limits))
    return JobContext(call_id="c", roots=[root], settings=settings)


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Write a layer of `geoms` with attribute columns `fields` (in `crs`) to `name` in the workspace."""

    def make(name: str, geoms: list[Any], fields: dict[str, list[Any]] | None = None, crs: str | None = UTM) -> Path:
        frame = gpd.GeoDataFrame(fields or {"id": list(range(len(geoms)))}, geometry=geoms, crs=crs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "'crs' was not provided", UserWarning)  # a layer without CRS, on purpose
            pyogrio.write_dataframe(frame, tmp_path / name)
        return tmp_path / name

    return make


def read(path: Path) -> gpd.GeoDataFrame:
    return pyogrio.read_dataframe(path, use_arrow=path.suffix != ".fgb")  # Arrow crashes on FlatGeobuf null geometries


def parcels() -> tuple[list[shapely.Geometry], dict[str, list[Any]]]:
    """A square with a hole, a multipolygon of two squares, a plain square that shares an edge with the first."""
    holed = shapely.Polygon(
        [(X0, Y0), (X0 + 100, Y0), (X0 + 100, Y0 + 100), (X0, Y0 + 100)],
        [[(X0 + 40, Y0 + 40), (X0 + 60, Y0 + 40), (X0 + 60, Y0 + 60), (X0 + 40, Y0 + 60)]],
    )
    multi = shapely.MultiPolygon([box(200, 0, 250, 50), box(300, 0, 350, 50)])
    return [holed, multi, box(100, 0, 150, 100)], {"id": [1, 2, 3], "name": ["a", "b", "c"], "value": [1.5, 2.5, 4.0]}


def zones() -> tuple[list[shapely.Geometry], dict[str, list[Any]]]:
    """Two overlapping zones across the parcels; they share the name field with them."""
    return [box(50, -20, 220, 70), box(140, 30, 330, 120)], {"id": [10, 20], "name": ["z1", "z2"], "kind": ["x", "y"]}
