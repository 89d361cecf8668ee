"""Whole layers as GeoDataFrames for the analysis tools: read through pyogrio with Arrow from checked workspace
paths, bounded in features, invalid geometries refused with their count or repaired, a second layer moved into the
first one's CRS, fields checked by name, and the result written to a temporary file renamed into place."""

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyogrio.errors
import shapely
from pyproj import CRS

from schemas.tools import limits as bounds
from schemas.tools.base import Reprojection
from schemas.tools.overlay import LayerWriteArgs
from workers.gdal import geoparquet
from workers.gdal.errors import reading, writing
from workers.gdal.outputs import file_ref
from workers.gdal.vector_io import NO_ARROW, geometry_type, layer_info, layer_name, no_geometry, output_driver
from workers.jobkit.confine import pinned, shown_paths
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output, output_path, resolve_in_workspace
from workers.jobkit.limits import exceeded, limits_of

GEOMETRY = "geometry"
FID1, FID2 = "__geogate_fid1", "__geogate_fid2"
"""A result feature's source feature ids in the first and second layer (missing: none there), which order the
result: a partitioned run's parts are put back in that order."""


@dataclass
class Input:
    """One input layer in memory and what reading it found."""

    frame: gpd.GeoDataFrame
    field: str
    """The argument that named it (`uri`, `other`): errors about it name that."""
    geometry_type: str
    """The layer's declared geometry type (what an empty result is written as)."""
    repaired: int = 0


@dataclass
class Target:
    """Where the result goes, checked before any input is read."""

    path: Path
    driver: str
    reprojected: list[Reprojection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def target(args: LayerWriteArgs, ctx: JobContext) -> Target:
    """The checked output path and its driver.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unknown driver.
    """
    path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    return Target(path, output_driver(args.driver, path))


def layer_of(path: Path, layer: str | None, field: str, layer_field: str) -> str:
    """`layer` (or the first) of the dataset at checked `path`; a missing layer is an error on `layer_field`."""
    try:
        return layer_name(path, layer, field)
    except JobFailed as exc:
        if exc.code != "layer.not_found" or layer_field == "layer":
            raise
        raise JobFailed(exc.code, f"{layer_field}: {layer!r} is not a layer of {field}", field=layer_field) from exc


Box = tuple[float, float, float, float]
"""minx, miny, maxx, maxy in a layer's CRS."""


def read_input(
    uri: str, layer: str | None, ctx: JobContext, *, field: str, layer_field: str, make_valid: bool
) -> Input:
    """Read one layer whole (Arrow), refusing more than `GEOGATE_LIMIT_FEATURES` features before reading them; the
    frame is indexed by feature id.

    Raises:
        JobFailed: path, read and layer errors naming `field` / `layer_field`; `layer.no_geometry` (a table);
            `limit.features`; `geometry.invalid` (invalid geometries and `make_valid` false).
    """
    path = resolve_in_workspace(uri, ctx.roots, field=field)
    name = layer_of(path, layer, field, layer_field)
    info = layer_info(path, name, field)
    count = max(int(info["features"]), 0)
    if count > limits_of(ctx.settings).features:
        raise exceeded(bounds.LAYER_FEATURES, field, f"the layer has {count:,} features", ctx.settings)
    read = Input(read_frame(path, name, field), field, str(info.get("geometry_type") or "Unknown"))
    frame, bad = validated(read.frame, field, make_valid)
    return Input(frame, field, read.geometry_type, int(bad.sum()))


Rows = tuple[int, int, int | None, int | None]
"""A run of a layer's features in file order: how many to skip, how many to read, and (a GeoPackage) the first and
last feature id of the run, by which SQLite reads it off its rowid order instead of stepping over the skipped ones."""


def read_frame(
    path: Path, name: str, field: str, box: Box | None = None, limit: int | None = None, rows: Rows | None = None
) -> gpd.GeoDataFrame:
    """Layer `name` of checked `path` (only the features whose bounding box meets `box`, or those of the run `rows`,
    when given) as a GeoDataFrame indexed by feature id in id order, its geometry column named `geometry`; at most
    `limit` features. A GeoParquet file's feature ids are its row numbers: it is read whole, then filtered by `box`
    or `rows`.

    Raises:
        JobFailed: read errors naming `field`; `layer.no_geometry` (a table).
    """
    if geoparquet.is_parquet(path):
        frame = geoparquet.read_frame(path, field)
        if isinstance(frame, gpd.GeoDataFrame) and box is not None:
            frame = frame[geoparquet.box_hits(frame.geometry.values.to_numpy(), box)]
        frame = frame if rows is None else frame.iloc[rows[0] : rows[0] + rows[1]]
        frame = frame if limit is None else frame.iloc[:limit]
    else:
        with reading(path, field):
            info = pyogrio.read_info(pinned(path, field), layer=name)
            # GDAL's Arrow stream names the id column after an attribute that a driver takes ids from (GeoJSON's
            # `id`), so that both columns have one name and pyogrio cannot index by it: read feature by feature
            clash = info.get("fid_column") in list(info["fields"])
            arrow = info["driver"] not in NO_ARROW and not clash
            where = _in_index(info, name, box) or _in_ids(info, rows)
            skip, count = (0, limit) if rows is None or where else (rows[0], rows[1])
            frame = pyogrio.read_dataframe(
                pinned(path, field),
                layer=name,
                bbox=None if where else box,
                where=where,
                skip_features=skip,
                max_features=count if limit is None or count is None else min(count, limit),
                fid_as_index=True,
                use_arrow=arrow,
            )
    if not isinstance(frame, gpd.GeoDataFrame):
        raise no_geometry(name, field)
    frame = frame if frame.index.is_monotonic_increasing else frame.sort_index()
    return frame.rename_geometry(GEOMETRY) if frame.geometry.name != GEOMETRY else frame


def _in_index(info: dict[str, Any], name: str, box: Box | None) -> str | None:
    """For a GeoPackage layer with its R-tree, the filter that asks SQLite for the features whose box meets `box`
    (an open side of `box` asks nothing): GDAL's own spatial filter takes the same features off the same index, but
    its Arrow reads of the four quarters of 200,000 points took 0.43 s, this one's 0.17 s."""
    if box is None or info["driver"] != "GPKG" or not info.get("capabilities", {}).get("fast_spatial_filter"):
        return None
    column, fid = info.get("geometry_name"), info.get("fid_column") or "fid"
    if not column:
        return None
    sides = zip(("maxx >=", "maxy >=", "minx <=", "miny <="), box, strict=True)
    clauses = [f"{side} {value!r}" for side, value in sides if math.isfinite(value)]
    condition = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"{quoted(fid)} IN (SELECT id FROM {quoted(f'rtree_{name}_{column}')}{condition})"


def _in_ids(info: dict[str, Any], rows: Rows | None) -> str | None:
    """For a run of a GeoPackage layer's features with its ids, the filter on them: 100,000 of 1,000,000 points in
    0.02 s at any place in the file, where skipping to the run steps over every feature before it (0.07–0.2 s)."""
    if rows is None or rows[2] is None or rows[3] is None or info["driver"] != "GPKG" or not info.get("fid_column"):
        return None
    return f"{quoted(info['fid_column'])} BETWEEN {int(rows[2])} AND {int(rows[3])}"


def quoted(identifier: str) -> str:
    """An SQL identifier quoted, whatever a hostile file named it."""
    return '"' + identifier.replace('"', '""') + '"'


def validated(frame: gpd.GeoDataFrame, field: str, make_valid: bool) -> tuple[gpd.GeoDataFrame, np.ndarray]:
    """`frame` with its invalid geometries repaired (`make_valid`), and which of its rows were invalid.

    Raises:
        JobFailed: `geometry.invalid` on `field`, with the count and the first one's reason, without `make_valid`.
    """
    geometry = frame.geometry.values.to_numpy()
    bad = ~shapely.is_missing(geometry) & ~shapely.is_valid(geometry)
    if not bad.any():
        return frame, bad
    if not make_valid:
        first = int(np.flatnonzero(bad)[0])
        reason = shapely.is_valid_reason(geometry[first])
        raise JobFailed(
            "geometry.invalid",
            f"{field}: {int(bad.sum())} of {len(geometry)} geometries are invalid (feature {first}: {reason}); "
            "pass make_valid=true to repair them",
            field=field,
        )
    repaired = geometry.copy()
    repaired[bad] = [_same_dimension(shapely.make_valid(g), shapely.get_dimensions(g)) for g in geometry[bad]]
    return frame.set_geometry(gpd.GeoSeries(repaired, index=frame.index, crs=frame.crs)), bad


def _same_dimension(geometry: shapely.Geometry, dimension: int) -> shapely.Geometry | None:
    """The parts of a repaired geometry of the original's dimension (no stray lines from a collapsed ring)."""
    if geometry.geom_type != "GeometryCollection":
        return geometry if shapely.get_dimensions(geometry) == dimension else None
    parts = [p for p in shapely.get_parts(geometry) if shapely.get_dimensions(p) == dimension]
    return shapely.union_all(parts) if parts else None


def aligned(first: Input, second: Input, out: Target) -> gpd.GeoDataFrame:
    """`second`'s frame in `first`'s CRS, the move said in `out` (`said_move`)."""
    a = first.frame.crs
    moved = said_move(out, a, second.frame.crs, (first.field, second.field))
    return second.frame.to_crs(a) if moved else second.frame.set_crs(a, allow_override=True)


def said_move(out: Target, a: Any, b: Any, fields: tuple[str, str] = ("uri", "other")) -> bool:
    """Whether the second layer (CRS `b`) is moved into the first's (`a`): a move is recorded in `out.reprojected`,
    a layer without CRS in `out.warnings` (its coordinates are then taken as the other's)."""
    if a is None or b is None:
        if (a is None) != (b is None):
            lacking = fields[0] if a is None else fields[1]
            out.warnings.append(f"{lacking} has no CRS: its coordinates are taken as the other layer's")
        return False
    if CRS(a) == CRS(b):
        return False
    out.reprojected.append(Reprojection(input=fields[1], from_crs=_crs_text(CRS(b)), to_crs=_crs_text(CRS(a))))
    return True


def _crs_text(crs: Any) -> str:
    return str(crs.to_string())


def check_fields(read: Input, names: list[str], arg: str) -> None:
    """Refuse names that are not attribute fields of the layer.

    Raises:
        JobFailed: `field.not_found`, on `arg`, naming the field and the layer's fields.
    """
    fields = [c for c in read.frame.columns if c != GEOMETRY]
    for name in names:
        if name not in fields:
            raise JobFailed(
                "field.not_found",
                f"{arg}: {name!r} is not a field of {read.field}; its fields are {fields}",
                field=arg,
            )


def suffixed(first: gpd.GeoDataFrame, second: gpd.GeoDataFrame, suffixes: list[str]) -> tuple[gpd.GeoDataFrame, ...]:
    """Both frames with the attribute names they share renamed with `suffixes`.

    Raises:
        JobFailed: `field.clash` (on `suffixes`) when a renamed field would take the name of another.
    """
    left = [c for c in first.columns if c != GEOMETRY]
    right = [c for c in second.columns if c != GEOMETRY]
    shared = set(left) & set(right)
    new_left = {c: c + suffixes[0] if c in shared else c for c in left}
    new_right = {c: c + suffixes[1] if c in shared else c for c in right}
    names = list(new_left.values()) + list(new_right.values())
    if len(set(names)) != len(names):
        clash = sorted({n for n in names if names.count(n) > 1})
        message = f"suffixes: the renamed fields would clash with others: {clash}; choose other suffixes"
        raise JobFailed("field.clash", message, field="suffixes")
    return first.rename(columns=new_left), second.rename(columns=new_right)


def write_result(frame: gpd.GeoDataFrame, out: Target, ctx: JobContext, empty_type: str) -> dict[str, Any]:
    """Write the features of `frame` that have a geometry to `out` through a temporary file renamed into place (the
    vector tools' one rule: no feature without a geometry is written; they are counted); the fields every result
    shares.

    Raises:
        JobFailed: `limit.features` (too many output features), `gdal.write_failed`.
    """
    geometry = frame.geometry.values.to_numpy()
    present = ~(shapely.is_missing(geometry) | shapely.is_empty(geometry))
    frame = frame[present].reset_index(drop=True)
    if len(frame) > limits_of(ctx.settings).features:
        raise exceeded(bounds.LAYER_FEATURES, "output", f"the result has {len(frame):,} features", ctx.settings)
    frame, renamed = _reserved_renamed(frame, out.driver)
    geometry = geometry[present]
    kind = geometry_type(geometry) if len(geometry) else empty_type.removesuffix(" Z")
    if out.driver == geoparquet.DRIVER:
        geoparquet.write_frame(frame, out.path, ctx.fence)
    else:
        pinned_target = Path(pinned(out.path, "output"))
        with atomic_output(pinned_target, ctx.fence) as tmp, writing():
            try:
                pyogrio.write_dataframe(
                    frame, tmp, layer=out.path.stem, driver=out.driver, geometry_type=kind, promote_to_multi=None
                )
            except pyogrio.errors.FeatureError as exc:
                message = f"output: {out.driver} could not write a feature: {shown_paths(str(exc))}"
                raise JobFailed("gdal.write_failed", message, field="output") from exc
    box = shapely.total_bounds(geometry).tolist() if len(geometry) else []
    return {
        "output": file_ref(out.path, out.driver),
        "feature_count": len(frame),
        "geometry_type": kind if len(geometry) else None,
        "bounds": box if box and not any(math.isnan(b) for b in box) else None,
        "crs": _crs_text(frame.crs) if frame.crs is not None else None,
        "empty_dropped": int(len(present) - present.sum()),
        "renamed_fields": renamed,
        "reprojected": out.reprojected,
        "warnings": out.warnings,
    }


def _reserved_renamed(frame: gpd.GeoDataFrame, driver: str) -> tuple[gpd.GeoDataFrame, dict[str, str]]:
    names = [str(c) for c in frame.columns if c != GEOMETRY]
    integer = {str(c) for c in frame.columns if pd.api.types.is_integer_dtype(frame[c])}
    renamed = reserved_renamed(names, integer, driver)
    return (frame.rename(columns=renamed) if renamed else frame), renamed


def reserved_renamed(names: list[str], integer: set[str], driver: str) -> dict[str, str]:
    """The renames of the fields `driver` reserves: a GeoPackage's `fid` is its integer feature id, so a `fid` field
    that is not integer (not in `integer`) becomes `source_fid` (as the other vector tools write it)."""
    taken, renamed = {n.lower() for n in names}, {}
    for name in names:
        if driver == "GPKG" and name.lower() == "fid" and name not in integer:
            new, n = "source_fid", 1
            while new.lower() in taken:
                n += 1
                new = f"source_fid_{n}"
            renamed[name] = new
            taken.add(new.lower())
    return renamed
