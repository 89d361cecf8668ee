"""Reading and writing vector layers for the jobs: chunked reads with progress, atomic writes with sidecars; GDAL
formats through pyogrio, GeoParquet through `workers.gdal.geoparquet`."""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyogrio.errors
import pyogrio.raw
import shapely

from workers.gdal import geoparquet
from workers.gdal.errors import reading, writing
from workers.gdal.outputs import REFUSED_DRIVERS, check_output_driver
from workers.jobkit.confine import pinned
from workers.jobkit.context import Fence, JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output

CHUNK_FEATURES = 20_000
"""Features read, processed and reported per step."""

GeometryOp = Callable[[np.ndarray], np.ndarray]
"""Maps an array of shapely geometries to another of the same length."""

NO_ARROW = frozenset({"FlatGeobuf"})
"""Drivers whose layers are read feature by feature, never through GDAL's Arrow stream: for a FlatGeobuf layer with a
feature without geometry that stream's WKB column is corrupt (negative lengths), and geopandas' reading of it kills
the process (SIGSEGV)."""


@dataclass(frozen=True)
class Layer:
    """One layer in memory: shapely geometries plus attribute columns, with what the source said about them."""

    name: str
    driver: str
    crs: str | None
    fields: list[str]
    columns: list[np.ndarray]
    geometry: np.ndarray
    spatial: bool = True
    """False for a table without a geometry column (a CSV, a GeoPackage attribute table): its rows have none."""

    def where(self, keep: np.ndarray) -> "Layer":
        """The features where `keep` is true."""
        return replace(self, columns=[c[keep] for c in self.columns], geometry=self.geometry[keep])

    def with_geometry(self) -> tuple["Layer", int]:
        """The features whose geometry is neither missing nor empty, and how many were left out: the one rule of
        the vector tools, which write no feature without a geometry. A table without a geometry column keeps its
        rows."""
        if not self.spatial:
            return self, 0
        present = ~(shapely.is_missing(self.geometry) | shapely.is_empty(self.geometry))
        return self.where(present), int(len(present) - present.sum())


def layer_name(path: Path, layer: str | None, field: str = "uri") -> str:
    """`layer` if the dataset has it, else its first layer; errors about the file name `field`.

    Raises:
        JobFailed: `layer.not_found`, or `gdal.not_geospatial` when the file has no layers.
    """
    if geoparquet.is_parquet(path):
        names = [geoparquet.describe(path, field).layer]
    else:
        with reading(path, field):
            names = [str(name) for name, _ in pyogrio.list_layers(pinned(path, field))]
    if not names:
        raise JobFailed("gdal.not_geospatial", f"{field}: {path.name!r} has no vector layers", field=field)
    if layer is not None and layer not in names:
        raise JobFailed("layer.not_found", f"layer: {layer!r} is not one of {names}", field="layer")
    return layer if layer is not None else names[0]


def no_geometry(layer: str, field: str = "uri") -> JobFailed:
    """The error for a geometry operation asked of a table without a geometry column."""
    return JobFailed(
        "layer.no_geometry",
        f"{field}: layer {layer!r} has no geometry column (a table: only vector_convert copies it)",
        field=field,
    )


def layer_info(path: Path, name: str, field: str = "uri", count: bool = True) -> dict[str, Any]:
    """What the source says of layer `name` before a feature is read: `driver`, `crs`, `geometry_type` (None for a
    table) and `features` (counted when `count`; else -1 where the driver must scan to know).

    Raises:
        JobFailed: the file cannot be read.
    """
    if geoparquet.is_parquet(path):
        found = geoparquet.describe(path, field)
        described = {"crs": found.crs, "geometry_type": found.geometry_type, "features": found.features}
        return {"driver": geoparquet.DRIVER, **described}
    with reading(path, field):
        return pyogrio.read_info(pinned(path, field), layer=name, force_feature_count=count)


Chunks = Iterator[tuple[list[str], np.ndarray, list[np.ndarray]]]
"""Field names, geometries and attribute columns, `CHUNK_FEATURES` features at a time."""


def _gdal_chunks(path: Path, name: str, total: int, field: str) -> Chunks:
    for skip in range(0, max(total, 1), CHUNK_FEATURES):
        with reading(path, field):
            meta, _, wkb, columns = pyogrio.raw.read(
                pinned(path, field), layer=name, skip_features=skip, max_features=CHUNK_FEATURES
            )
        geometry = shapely.from_wkb(wkb) if wkb is not None else np.full(len(columns[0]) if columns else 0, None)
        yield list(meta["fields"]), geometry, columns


def _parquet_chunks(path: Path, total: int, field: str) -> Chunks:
    frame = geoparquet.read_frame(path, field)
    spatial = isinstance(frame, gpd.GeoDataFrame)
    geometry = frame.geometry.values.to_numpy() if spatial else np.full(len(frame), None, dtype=object)
    fields = [str(c) for c in frame.columns if not spatial or c != frame.geometry.name]
    columns = [_column(frame[name]) for name in fields]
    for skip in range(0, max(total, 1), CHUNK_FEATURES):
        end = skip + CHUNK_FEATURES
        yield fields, geometry[skip:end], [c[skip:end] for c in columns]


def _column(values: pd.Series) -> np.ndarray:
    """A column as pyogrio reads one: numbers (nullable ones as floats, missing as NaN) and times (in UTC) as they
    are, lists and structs as JSON text, anything else as objects with None missing."""
    if pd.api.types.is_bool_dtype(values) and not pd.api.types.is_extension_array_dtype(values):
        return values.to_numpy()
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        extension = pd.api.types.is_extension_array_dtype(values)
        return values.to_numpy(dtype="float64", na_value=np.nan) if extension else values.to_numpy()
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        return values.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    if pd.api.types.is_datetime64_dtype(values):
        return values.to_numpy()
    out = values.to_numpy(dtype=object, na_value=None).copy()  # the frame's own may be read-only
    nested = np.flatnonzero([isinstance(v, list | dict | np.ndarray) for v in out])
    out[nested] = [json.dumps(v.tolist() if isinstance(v, np.ndarray) else v, default=str) for v in out[nested]]
    return out


def read_layer(
    path: Path,
    layer: str | None,
    ctx: JobContext,
    op: GeometryOp | None = None,
    field: str = "uri",
    counted: Callable[[int], None] | None = None,
) -> Layer:
    """Read a layer `CHUNK_FEATURES` at a time, applying `op` to each chunk's geometries and reporting progress;
    `counted` is given the layer's feature count before a feature is read (where a bound refuses it).

    Raises:
        JobFailed: the file cannot be read, the layer does not exist, `op` is given for a table without geometries
            (or what `counted` raises).
        JobCancelled: the call was cancelled between chunks.
    """
    name = layer_name(path, layer, field)
    info = layer_info(path, name, field)
    if op is not None and info["geometry_type"] is None:
        raise no_geometry(name, field)
    total, parts = max(int(info["features"]), 0), []
    if counted is not None:
        counted(total)
    parquet = info["driver"] == geoparquet.DRIVER
    chunks = _parquet_chunks(path, total, field) if parquet else _gdal_chunks(path, name, total, field)
    for skip, (fields, geometry, columns) in zip(range(0, max(total, 1), CHUNK_FEATURES), chunks, strict=True):
        parts.append((fields, op(geometry) if op is not None else geometry, columns))
        ctx.progress(min(skip + CHUNK_FEATURES, total), total, f"read {min(skip + CHUNK_FEATURES, total)}/{total}")
    fields = parts[-1][0]  # a chunk even for an empty layer
    columns = [np.concatenate([p[2][i] for p in parts]) for i in range(len(fields))]
    geometry = np.concatenate([p[1] for p in parts])
    spatial = info["geometry_type"] is not None
    return Layer(name, str(info["driver"]), info["crs"], fields, columns, geometry, spatial)


def output_driver(driver: str | None, output: Path) -> str:
    """The driver to write `output` with: `driver` if GDAL can write it, else the one its extension names;
    GeoParquet (`Parquet`, `GeoParquet`, `.parquet`, `.geoparquet`) is written by `geoparquet`.

    Raises:
        JobFailed: `driver.unknown`, listing the drivers that can write; `driver.unsupported` for a driver of
            `outputs.REFUSED_DRIVERS` (naming `output` when its extension chose it).
    """
    if geoparquet.is_parquet_driver(driver) or (driver is None and geoparquet.is_parquet(output)):
        return geoparquet.DRIVER
    writable = sorted((set(pyogrio.list_drivers(write=True)) - REFUSED_DRIVERS.keys()) | {geoparquet.DRIVER})
    if driver is not None:
        check_output_driver(driver, "driver")
    else:
        try:
            driver = pyogrio.raw.detect_write_driver(str(output))
        except ValueError as exc:
            raise JobFailed(
                "driver.unknown",
                f"driver: cannot tell the format of {output.name!r}; pass one of {writable}",
                field="driver",
            ) from exc
        check_output_driver(driver, "output")
    if driver not in writable:
        raise JobFailed(
            "driver.unknown", f"driver: {driver!r} cannot write here; use one of {writable}", field="driver"
        )
    return driver


TYPE_NAMES = {0: "Point", 1: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon"}
"""Layer geometry type names by shapely type id."""
MULTI_OF = {0: 4, 1: 5, 3: 6}
"""Each single type id's Multi form."""


def geometry_type(geometry: np.ndarray) -> str:
    """The layer geometry type for `geometry` (`layer_type` of its type ids)."""
    return layer_type(set(shapely.get_type_id(geometry[~shapely.is_missing(geometry)]).tolist()))


def layer_type(kinds: set[int]) -> str:
    """The layer geometry type of features of these shapely type ids: the common type, its Multi form when mixed
    with it, else Unknown."""
    if len(kinds) == 1 and kinds <= TYPE_NAMES.keys():
        return TYPE_NAMES[next(iter(kinds))]
    for single, multi in MULTI_OF.items():
        if kinds == {single, multi}:
            return TYPE_NAMES[multi]
    return "Unknown"


def _reserved_renamed(layer: Layer, driver: str) -> tuple[list[str], dict[str, str]]:
    """`layer`'s field names with those `driver` reserves renamed, and the renames: a GeoPackage's `fid` is its
    integer feature id, so a `fid` field that is not integer (GML's text ids) becomes `source_fid`."""
    fields, renamed = list(layer.fields), {}
    for i, name in enumerate(fields):
        if driver == "GPKG" and name.lower() == "fid" and not np.issubdtype(layer.columns[i].dtype, np.integer):
            new, n = "source_fid", 1
            while new.lower() in {f.lower() for f in fields}:
                n += 1
                new = f"source_fid_{n}"
            fields[i] = renamed[name] = new
    return fields, renamed


_COLLECTIONS = (4, 5, 6, 7)
_MULTI = {0: shapely.multipoints, 1: shapely.multilinestrings, 2: shapely.multipolygons}


def of_dimension(geometry: np.ndarray, dimension: np.ndarray) -> np.ndarray:
    """Each geometry reduced to its non-empty parts of `dimension` (0 points, 1 lines, 2 polygons; one per
    geometry): one part as itself, several as their Multi geometry, none as None. Every part of a collection is
    looked at, so a polygon with stray edges keeps only the polygon."""
    parts, owner = geometry, np.arange(len(geometry))
    while (nested := np.isin(shapely.get_type_id(parts), _COLLECTIONS)).any():
        inner, index = shapely.get_parts(parts[nested], return_index=True)
        parts = np.concatenate([parts[~nested], inner])
        owner = np.concatenate([owner[~nested], owner[nested][index]])
    wanted = (shapely.get_dimensions(parts) == np.asarray(dimension)[owner]) & ~shapely.is_empty(parts)
    order = np.argsort(owner[wanted], kind="stable")
    parts, owner = parts[wanted][order], owner[wanted][order]
    out = np.full(len(geometry), None, dtype=object)
    owners, first, count = np.unique(owner, return_index=True, return_counts=True)
    out[owners[count == 1]] = parts[first[count == 1]]
    for i in owners[count > 1].tolist():
        mine = parts[owner == i]
        out[i] = _MULTI[int(shapely.get_dimensions(mine[0]))](mine)
    return out


def _frame(layer: Layer, crs: str | None) -> pd.DataFrame:
    """`layer` as a GeoDataFrame in `crs` (a DataFrame for a table)."""
    frame = pd.DataFrame(dict(zip(layer.fields, layer.columns, strict=True)), index=pd.RangeIndex(len(layer.geometry)))
    return gpd.GeoDataFrame(frame, geometry=gpd.GeoSeries(layer.geometry, crs=crs)) if layer.spatial else frame


def write_layer(
    layer: Layer, target: Path, driver: str, crs: str | None, encoding: str | None = None, fence: Fence | None = None
) -> dict[str, str]:
    """Write `layer` to a temporary file beside `target` and rename it (and its sidecars) into place; the fields
    renamed because `driver` reserves their names, old → new.

    Raises:
        JobFailed: `gdal.write_failed`.
    """
    fields, renamed = _reserved_renamed(layer, driver)
    if driver == geoparquet.DRIVER:
        geoparquet.write_frame(_frame(layer, crs), target, fence)
        return renamed
    kind = geometry_type(layer.geometry) if layer.spatial else None
    wkb = np.array(shapely.to_wkb(layer.geometry), dtype=object) if layer.spatial else None  # a table: no column
    options = {"encoding": encoding} if driver == "ESRI Shapefile" and encoding else {}
    target = Path(pinned(target, "output"))  # written in the folder that was checked
    with atomic_output(target, fence) as tmp, writing():  # a Shapefile's .shx/.dbf/.prj/.cpg go with it
        pyogrio.raw.write(
            tmp, wkb, layer.columns, fields, layer=target.stem, driver=driver, geometry_type=kind,
            crs=crs, promote_to_multi=(kind or "").startswith("Multi") or None, **options,
        )  # fmt: skip
    return renamed
