"""The fan-in of a partitioned overlay or join: the cells' parts (GeoParquet tables in Arrow files) put together in
the order of their sort keys, and written as one layer, without turning a geometry into a Python object (but where a
driver needs single geometries promoted to multi ones). One process writing the result holds it as Arrow columns:
about a fifth of the memory of the same features as shapely geometries in a GeoDataFrame."""

import json
import math
from pathlib import Path
from typing import Any

import geopandas as gpd
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyogrio
import pyogrio.errors
import shapely
from pyogrio.raw import DRIVERS_NO_MIXED_SINGLE_MULTI

from schemas.tools import limits as bounds
from workers.gdal import geoparquet
from workers.gdal.errors import writing
from workers.gdal.outputs import file_ref
from workers.gdal.vector_io import MULTI_OF, layer_type
from workers.jobkit.confine import pinned, shown_paths
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output
from workers.jobkit.limits import exceeded, limits_of
from workers.vector.layers import GEOMETRY, Target, reserved_renamed

KEYS = ("__geogate_k0", "__geogate_k1", "__geogate_k2")
"""A part's sort keys: the fan-in orders every feature by them (the one-process order)."""


def keyed(frame: gpd.GeoDataFrame, keys: list[np.ndarray]) -> tuple[gpd.GeoDataFrame, dict[str, Any]]:
    """A cell's result ready to save: its features with a geometry, `keys` as columns; and what the fan-in needs of
    it (rows, features dropped for want of a geometry, geometry kinds, bounds)."""
    geometry = frame.geometry.values.to_numpy()
    present = ~(shapely.is_missing(geometry) | shapely.is_empty(geometry))
    columns = {name: np.asarray(key, dtype=float)[present] for name, key in zip(KEYS, keys, strict=True)}
    kept = frame[present].reset_index(drop=True).assign(**columns)
    box = shapely.total_bounds(geometry[present]).tolist() if present.any() else None
    kinds = sorted(set(shapely.get_type_id(geometry[present]).tolist()))
    return kept, {"rows": len(kept), "dropped": int((~present).sum()), "kinds": kinds, "bounds": box}


def write_parts(
    paths: list[Path], described: list[dict[str, Any]], out: Target, ctx: JobContext, crs: str | None, empty: str
) -> dict[str, Any]:
    """Write the parts at `paths` (with their `keyed` descriptions) to `out` as one layer in key order; the fields
    every analysis result shares, as `workers.vector.layers.write_result` gives them.

    Raises:
        JobFailed: `limit.features` (too many output features, before anything is read), `gdal.write_failed`.
    """
    rows = sum(int(d["rows"]) for d in described)
    if rows > limits_of(ctx.settings).features:
        raise exceeded(bounds.LAYER_FEATURES, "output", f"the result has {rows:,} features", ctx.settings)
    kinds = {int(k) for d in described for k in d["kinds"]}
    kind = layer_type(kinds) if kinds else empty.removesuffix(" Z")
    tables = [_part(p, index) for index, p in enumerate(paths)]
    geo = _geo_metadata(tables)
    table = _ordered(tables)
    if out.driver == geoparquet.DRIVER:
        with atomic_output(Path(pinned(out.path, "output")), ctx.fence) as tmp, writing():
            pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), tmp)
        return _described(out, rows, kind, described, crs, {})
    covering = geo["columns"][GEOMETRY].get("covering", {}).get("bbox", {}).get("xmin", [None])[0]
    table = table.drop_columns([covering]) if covering in table.column_names else table
    if out.driver in DRIVERS_NO_MIXED_SINGLE_MULTI and kind.startswith("Multi") and len(kinds) > 1:
        table = _promoted(table)
    table, renamed = _renamed(table, out.driver)
    with atomic_output(Path(pinned(out.path, "output")), ctx.fence) as tmp, writing():
        try:
            pyogrio.write_arrow(
                table, tmp, layer=out.path.stem, driver=out.driver, geometry_name=GEOMETRY, geometry_type=kind, crs=crs
            )
        except pyogrio.errors.FeatureError as exc:
            message = f"output: {out.driver} could not write a feature: {shown_paths(str(exc))}"
            raise JobFailed("gdal.write_failed", message, field="output") from exc
    return _described(out, rows, kind, described, crs, renamed)


def _described(
    out: Target, rows: int, kind: str, described: list[dict[str, Any]], crs: str | None, renamed: dict[str, str]
) -> dict[str, Any]:
    return {
        "output": file_ref(out.path, out.driver),
        "feature_count": rows,
        "geometry_type": kind if rows else None,
        "bounds": _bounds([d["bounds"] for d in described if d["bounds"]]),
        "crs": crs,
        "empty_dropped": sum(int(d["dropped"]) for d in described),
        "renamed_fields": renamed,
        "reprojected": out.reprojected,
        "warnings": out.warnings,
    }


def _part(path: Path, index: int) -> pa.Table:
    """The part at `path` (the `index`th), mapped, checked whole.

    Raises:
        JobFailed: `tiles.invalid_part` (not an Arrow file of a part).
    """
    try:
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        table.validate(full=True)
        if GEOMETRY not in json.loads(table.schema.metadata[b"geo"])["columns"]:
            raise KeyError(GEOMETRY)
    except (pa.ArrowException, OSError, TypeError, KeyError, ValueError) as exc:
        raise JobFailed("tiles.invalid_part", f"part {index} of the call cannot be read as a part") from exc
    return table


def _geo_metadata(tables: list[pa.Table]) -> dict[str, Any]:
    """The GeoParquet metadata of all the parts together: the first's, with every part's geometry types and the
    box of their boxes (what geopandas writes for the whole layer)."""
    metas = [json.loads(t.schema.metadata[b"geo"]) for t in tables]
    geo = metas[0]
    spec = geo["columns"][GEOMETRY]
    specs = [m["columns"][GEOMETRY] for m in metas]
    spec["geometry_types"] = sorted({t for one in specs for t in one.get("geometry_types", [])})
    box = _bounds([one["bbox"] for one in specs if one.get("bbox")])
    if box is None:
        spec.pop("bbox", None)
    else:
        spec["bbox"] = box
    return geo


def _ordered(tables: list[pa.Table]) -> pa.Table:
    """The parts as one table in key order, the keys dropped; types promoted as pandas would (int with missing
    values to float), a part with no rows (whose empty columns carry no type) left out unless all are."""
    full = [t for t in tables if t.num_rows] or tables[:1]
    table = pa.concat_tables([t.replace_schema_metadata(None) for t in full], promote_options="permissive")
    if not _ascending([table[k].to_numpy() for k in KEYS]):
        # parts already in order (a join's runs) are kept as they are: taking 981,933 rows costs 0.6 s
        table = table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in KEYS]))
    return table.drop_columns(list(KEYS))


def _ascending(keys: list[np.ndarray]) -> bool:
    """Whether the rows are in the order of `keys` (most significant first) already: no missing key, none after
    the row that follows it."""
    if any(np.isnan(k).any() for k in keys):
        return False
    later = np.ones(max(len(keys[0]) - 1, 0), dtype=bool)  # rows equal so far on the more significant keys
    for key in keys:
        if (later & (key[1:] < key[:-1])).any():
            return False
        later &= key[1:] == key[:-1]
    return True


def _promoted(table: pa.Table) -> pa.Table:
    """`table` with its single geometries made multi ones, for a driver that takes no mix of them in a layer."""
    geometry = shapely.from_wkb(table[GEOMETRY].to_numpy(zero_copy_only=False))
    for single, multi in MULTI_OF.items():
        ones = shapely.get_type_id(geometry) == single
        if ones.any():
            make = {4: shapely.multipoints, 5: shapely.multilinestrings, 6: shapely.multipolygons}[multi]
            geometry[ones] = [make([g]) for g in geometry[ones]]
    field = table.schema.field(GEOMETRY)
    index = table.schema.get_field_index(GEOMETRY)
    return table.set_column(index, field, pa.array(shapely.to_wkb(geometry), type=field.type))


def _renamed(table: pa.Table, driver: str) -> tuple[pa.Table, dict[str, str]]:
    integer = {f.name for f in table.schema if pa.types.is_integer(f.type)}
    names = [n for n in table.column_names if n != GEOMETRY]
    renamed = reserved_renamed(names, integer, driver)
    return (table.rename_columns([renamed.get(n, n) for n in table.column_names]) if renamed else table), renamed


def _bounds(boxes: list[list[float]]) -> list[float] | None:
    if not boxes:
        return None
    b = np.array(boxes)
    box = [float(b[:, 0].min()), float(b[:, 1].min()), float(b[:, 2].max()), float(b[:, 3].max())]
    return None if any(math.isnan(v) for v in box) else box
