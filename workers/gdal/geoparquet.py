"""GeoParquet layers through pyarrow and geopandas (pyogrio's GDAL has no Parquet driver): what a file holds, read from
its footer before any feature; its features, read from one descriptor of the checked file; a frame written as
GeoParquet 1.1 with a bbox covering column, staged and renamed into place.

A Parquet file is read only through a descriptor opened without following links, so nothing but that one regular
file reaches pyarrow: not a folder of files (a partitioned dataset), not a link. A column chunk may name another file
(`file_path`, meant for a `_metadata` summary of a dataset); pyarrow ignores it when reading one file, and a file
that names one is refused all the same, before its data is read.
"""

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import shapely
from geopandas.array import GeometryDtype
from pyproj import CRS
from pyproj.exceptions import CRSError

from workers.gdal.errors import writing
from workers.jobkit.confine import pinned, shown_paths
from workers.jobkit.context import Fence
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output

SUFFIXES = (".parquet", ".geoparquet")
"""Extensions read and written as GeoParquet."""
DRIVER = "Parquet"
"""The driver name results give (GDAL's name for the format); `driver` also takes `GeoParquet`."""
Box = tuple[float, float, float, float]
"""xmin, ymin, xmax, ymax in the layer's CRS."""

_INDEX = re.compile(r"^__index_level_\d+__$")
"""A pandas index stored as a column: not a field."""
_MULTI = {"Point": "MultiPoint", "LineString": "MultiLineString", "Polygon": "MultiPolygon"}


def is_parquet(path: Path) -> bool:
    """Whether `path` is read and written as GeoParquet (its extension)."""
    return path.suffix.lower() in SUFFIXES


def is_parquet_driver(driver: str | None) -> bool:
    """Whether `driver` names GeoParquet (`Parquet` or `GeoParquet`, in any case)."""
    return driver is not None and driver.lower() in ("parquet", "geoparquet")


@dataclass(frozen=True)
class ParquetInfo:
    """What a GeoParquet file's footer says, read before any feature."""

    layer: str
    """The file's one layer: its stem, as GDAL names it."""
    features: int
    geometry_column: str | None
    """None for a Parquet table without GeoParquet metadata (a table, as a CSV is)."""
    geometry_type: str | None
    """The layer type the file's `geometry_types` make (`Unknown` when they are several or none)."""
    crs: str | None
    fields: list[str]
    types: list[str]
    """Each field's Arrow type."""
    bounds: list[float] | None
    """xmin, ymin, xmax, ymax from the GeoParquet metadata; None when it has none."""
    covering: bool
    """The file has a bbox covering column, so a bbox read skips row groups and rows by it."""


def describe(path: Path, field: str = "uri") -> ParquetInfo:
    """The footer of the GeoParquet file at `path` (a checked workspace path); no feature is read.

    Raises:
        JobFailed: `gdal.corrupt` (not Parquet, malformed GeoParquet metadata), `path.outside_workspace` (a column
            chunk names another file, the file became a link), `gdal.not_geospatial` (not a regular file); each
            naming `field`.
    """
    with _opened(path, field) as handle:
        return _described(_footer(handle, path, field), path, field)


def read_frame(path: Path, field: str = "uri", bbox: Box | None = None) -> gpd.GeoDataFrame | pd.DataFrame:
    """The features of the GeoParquet file at `path`, or only those whose bounding box intersects `bbox` (through
    the bbox covering column when the file has one, else filtered after reading). A Parquet table without GeoParquet
    metadata is a `DataFrame`; geometry columns other than the primary one are WKT text.

    Raises:
        JobFailed: what `describe` raises; `gdal.corrupt` when the data cannot be read.
    """
    with _opened(path, field) as handle:
        info = _described(_footer(handle, path, field), path, field)
        with _reading(path, field):
            if info.geometry_column is None:
                return pq.read_table(handle).to_pandas()
            frame = gpd.read_parquet(handle, bbox=bbox if info.covering else None)
    if bbox is not None and not info.covering:
        frame = frame[box_hits(frame.geometry.values.to_numpy(), bbox)]
    return _plain(frame)


def read_table(path: Path, field: str = "uri") -> pa.Table:
    """The Parquet file at `path` as an Arrow table, its schema metadata (`geo`) kept; checked as in `describe`.

    Raises:
        JobFailed: what `describe` raises; `gdal.corrupt` when the data cannot be read.
    """
    with _opened(path, field) as handle:
        _described(_footer(handle, path, field), path, field)
        with _reading(path, field):
            return pq.read_table(handle)


def write_frame(frame: pd.DataFrame, target: Path, fence: Fence | None = None) -> None:
    """Write `frame` to a temporary file beside `target`, renamed into place: a GeoDataFrame as GeoParquet 1.1 with
    a bbox covering column (unless it has a field named `bbox`), a DataFrame as a plain Parquet table.

    Raises:
        JobFailed: `gdal.write_failed`, naming `output`.
        JobSuperseded: the fence says another attempt is current.
    """
    target = Path(pinned(target, "output"))  # written in the folder that was checked
    with atomic_output(target, fence) as tmp, writing(), tmp.open("wb") as sink:
        try:
            if isinstance(frame, gpd.GeoDataFrame):
                covering = "bbox" not in frame.columns
                frame.to_parquet(sink, index=False, schema_version="1.1.0", write_covering_bbox=covering)
            else:
                pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), sink)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            message = f"output: the layer could not be written as GeoParquet: {shown_paths(str(exc))}"
            raise JobFailed("gdal.write_failed", message, field="output") from exc


@contextlib.contextmanager
def _opened(path: Path, field: str) -> Iterator[pa.NativeFile]:
    """The one regular file at `path`, read by offset (not mapped: a file truncated meanwhile is a read error, not a
    SIGBUS); a link, a folder or anything else is refused."""
    try:
        fd = os.open(pinned(path, field), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:  # ELOOP: the file became a link after it was checked
        message = f"{field}: {path.name!r} cannot be opened as one file ({exc.strerror})"
        raise JobFailed("path.outside_workspace", message, field=field) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            message = f"{field}: {path.name!r} is not a file (a GeoParquet input is one file, not a folder of them)"
            raise JobFailed("gdal.not_geospatial", message, field=field)
        with _reading(path, field), pa.OSFile(f"/proc/self/fd/{fd}") as handle:  # the descriptor's own file
            yield handle
    finally:
        os.close(fd)


@contextlib.contextmanager
def _reading(path: Path, field: str) -> Iterator[None]:
    try:
        yield
    except (pa.ArrowException, OSError, ValueError, TypeError, shapely.errors.ShapelyError) as exc:
        message = f"{field}: {path.name!r} is not a readable GeoParquet file: {shown_paths(str(exc))}"
        raise JobFailed("gdal.corrupt", message, field=field) from exc


def _footer(handle: pa.NativeFile, path: Path, field: str) -> pq.FileMetaData:
    with _reading(path, field):
        meta = pq.read_metadata(handle)
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        for column in range(row_group.num_columns):
            if row_group.column(column).file_path:
                message = f"{field}: {path.name!r} names another file for its data; only self-contained files are read"
                raise JobFailed("path.outside_workspace", message, field=field)
    return meta


def _described(meta: pq.FileMetaData, path: Path, field: str) -> ParquetInfo:
    with _reading(path, field):
        schema = meta.schema.to_arrow_schema()
    geo = _geo(meta, path, field)
    column = geo["primary_column"] if geo else None
    spec: dict[str, Any] = geo["columns"][column] if geo else {}
    covering = spec.get("covering", {}).get("bbox", {}).get("xmin", [None])[0]
    hidden = {column, covering}
    fields = [f for f in schema if f.name not in hidden and not _INDEX.match(f.name)]
    return ParquetInfo(
        layer=path.stem,
        features=meta.num_rows,
        geometry_column=column,
        geometry_type=_layer_type(spec.get("geometry_types", [])) if geo else None,
        crs=_crs(spec, path, field) if geo else None,
        fields=[f.name for f in fields],
        types=[str(f.type) for f in fields],
        bounds=_bounds(spec.get("bbox")),
        covering=covering is not None and covering in schema.names,
    )


def _geo(meta: pq.FileMetaData, path: Path, field: str) -> dict[str, Any] | None:
    """The `geo` metadata, checked for what reading it needs; None for a plain Parquet table."""
    raw = (meta.metadata or {}).get(b"geo")
    if raw is None:
        return None
    try:
        geo = json.loads(raw)
        spec = geo["columns"][geo["primary_column"]]
        valid = isinstance(spec, dict) and isinstance(spec.get("geometry_types", []), list)
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid:
        message = f"{field}: {path.name!r} has malformed GeoParquet metadata (its 'geo' key)"
        raise JobFailed("gdal.corrupt", message, field=field)
    return geo


def _layer_type(kinds: list[str]) -> str:
    """GeoParquet's `geometry_types` as one layer type: the one type, a Multi type with its single form, or
    Unknown (GDAL's rule for a mixed layer)."""
    names = {str(k) for k in kinds}
    z = " Z" if names and all(n.endswith(" Z") for n in names) else ""
    plain = {n.removesuffix(" Z") for n in names}
    if len(plain) == 1:
        return plain.pop() + z
    single = next((s for s, m in _MULTI.items() if plain == {s, m}), None)
    return _MULTI[single] + z if single is not None else "Unknown"


def _crs(spec: dict[str, Any], path: Path, field: str) -> str | None:
    """The CRS as the vector tools name one: its authority code, else WKT. A missing `crs` is OGC:CRS84 (the
    GeoParquet default); an explicit null is none."""
    given = spec.get("crs", "OGC:CRS84")
    if given is None:
        return None
    named = given.get("id") if isinstance(given, dict) else None
    if isinstance(named, dict) and {"authority", "code"} <= named.keys():  # the file names it: no PROJJSON to parse
        return f"{named['authority']}:{named['code']}"
    try:
        crs = CRS.from_json_dict(given) if isinstance(given, dict) else CRS.from_user_input(given)
    except CRSError as exc:
        raise JobFailed("crs.unknown", f"{field}: {path.name!r} has a CRS PROJ does not know", field=field) from exc
    found = crs.to_authority()
    return f"{found[0]}:{found[1]}" if found else crs.to_wkt()


def _bounds(bbox: Any) -> list[float] | None:
    if not isinstance(bbox, list) or len(bbox) not in (4, 6):
        return None
    box = [float(v) for v in (bbox if len(bbox) == 4 else [bbox[0], bbox[1], bbox[3], bbox[4]])]
    return box if np.isfinite(box).all() else None


def box_hits(geometry: np.ndarray, bbox: Box) -> np.ndarray:
    """Whether each geometry's bounding box intersects `bbox` (what a covering column's filter keeps)."""
    xmin, ymin, xmax, ymax = shapely.bounds(geometry).T
    with np.errstate(invalid="ignore"):  # a missing or empty geometry's bounds are NaN: never a hit
        return (xmin <= bbox[2]) & (xmax >= bbox[0]) & (ymin <= bbox[3]) & (ymax >= bbox[1])


def _plain(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """`frame` with a default index and one geometry column: other geometry columns as WKT text."""
    frame = frame.reset_index(drop=all(name is None for name in frame.index.names))
    for name in frame.columns:
        if name != frame.geometry.name and isinstance(frame[name].dtype, GeometryDtype):
            frame[name] = frame[name].to_wkt()
    return frame
