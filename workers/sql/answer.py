"""`vector_sql`'s job: check the query, run it on the locked connection, and answer a table or write a layer."""

import datetime as dt
import decimal
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import shapely

from schemas.tools.sql import SqlColumn, SqlLayer, SqlLayerRef, VectorSqlArgs, VectorSqlResult
from workers.gdal.errors import parse_crs
from workers.gdal.outputs import file_ref
from workers.gdal.vector_io import Layer, geometry_type, output_driver, write_layer
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import output_path, resolve_in_workspace
from workers.sql.engine import LoadedLayer, connection, run_query
from workers.sql.guard import check_query

TABLE_ROWS_DEFAULT = 100
OUTPUT_ROWS_DEFAULT = 1_000_000


def _is_geometry(kind: str) -> bool:
    return kind.upper().startswith("GEOMETRY")


def _json_value(value: Any) -> Any:
    """`value` as JSON can hold it: NaN and infinities as null, decimals as numbers, times as ISO text, bytes as
    hex, nested values recursively, anything else as its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return _json_value(float(value))
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return str(value)


def _geometries(column: pa.ChunkedArray) -> np.ndarray:
    return shapely.from_wkb(np.array(column.to_pylist(), dtype=object))


def _cells(column: pa.ChunkedArray, kind: str, geometry_format: str) -> list[Any]:
    if not _is_geometry(kind):
        return [_json_value(v) for v in column.to_pylist()]
    shapes = _geometries(column)
    if geometry_format == "geojson":
        return [None if g is None else json.loads(shapely.to_geojson(g)) for g in shapes]
    return [None if g is None else shapely.to_wkt(g) for g in shapes]


def _common_crs(args: VectorSqlArgs, loaded: list[LoadedLayer]) -> str | None:
    if args.crs is not None:
        parse_crs(args.crs, "crs")
        return args.crs
    named = {layer.crs for layer in loaded if layer.crs is not None}
    if len(named) > 1:
        shown = ", ".join(f"{layer.name}: {layer.crs}" for layer in loaded)
        message = f"crs: the layers are in different CRSs ({shown}); pass crs to say which the result is in"
        raise JobFailed("crs.ambiguous", message, field="crs")
    return named.pop() if named else None


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        count = seen.get(name.lower(), 0) + 1
        seen[name.lower()] = count
        out.append(name if count == 1 else f"{name}_{count}")
    return out


def _field_values(column: pa.ChunkedArray, kind: str) -> np.ndarray:
    """A column as pyogrio writes it: numbers, text, times; geometry as WKT; anything else as JSON text."""
    if _is_geometry(kind):
        return np.array([None if g is None else shapely.to_wkt(g) for g in _geometries(column)], dtype=object)
    if pa.types.is_decimal(column.type):
        column = column.cast(pa.float64())
    plain = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_string, pa.types.is_date)
    if any(test(column.type) for test in plain) or pa.types.is_timestamp(column.type):
        return column.to_numpy(zero_copy_only=False)
    values = [None if v is None else json.dumps(_json_value(v)) for v in column.to_pylist()]
    return np.array(values, dtype=object)


def write_rows(
    output: str,
    driver: str | None,
    overwrite: bool,
    table: pa.Table,
    kinds: list[str],
    crs: str | None,
    ctx: JobContext,
) -> dict:
    """Write result rows as a layer at `output`, staged beside it; what a result says about it. The first GEOMETRY
    column is the layer's geometry, other ones are written as WKT.

    Raises:
        JobFailed: `query.no_geometry`, or an output error (`output`, `driver`).
    """
    dst = output_path(output, ctx.roots, overwrite=overwrite)
    spatial = [i for i, kind in enumerate(kinds) if _is_geometry(kind)]
    if not spatial:
        message = "query: the result has no GEOMETRY column to write as a layer; select one (e.g. geom) or omit output"
        raise JobFailed("query.no_geometry", message, field="query")
    names = _unique(table.column_names)
    geometry = _geometries(table.column(spatial[0]))
    fields = [names[i] for i in range(len(names)) if i != spatial[0]]
    columns = [_field_values(table.column(i), kinds[i]) for i in range(len(names)) if i != spatial[0]]
    driver = output_driver(driver, dst)
    write_layer(Layer(dst.stem, driver, crs, fields, columns, geometry), dst, driver, crs, fence=ctx.fence)
    present = geometry[~shapely.is_missing(geometry) & ~shapely.is_empty(geometry)]
    bounds = shapely.total_bounds(present).tolist() if len(present) else None
    return {
        "output": file_ref(dst, driver),
        "geometry_type": geometry_type(geometry) if len(present) else None,
        "bounds": bounds,
        "crs": crs,
    }


def _inputs(args: VectorSqlArgs, ctx: JobContext) -> dict[str, tuple[Path, str | None]]:
    found = {}
    for name, ref in args.layers.items():
        uri, layer = (ref.uri, ref.layer) if isinstance(ref, SqlLayerRef) else (ref, None)
        found[name] = (resolve_in_workspace(uri, ctx.roots, field=f"layers.{name}"), layer)
    return found


def vector_sql(args: VectorSqlArgs, ctx: JobContext) -> VectorSqlResult:
    """Load the named layers, check and run the query within `args.timeout_s`, keep at most `max_rows` rows, and
    answer them as a table or write them to `args.output`.

    Raises:
        JobFailed: a bad layer (`layers.<name>`), a refused or failing query (`query`), a timeout (`timeout_s`),
            an ambiguous CRS (`crs`) or an output error (`output`, `driver`).
        JobCancelled: the call was cancelled between steps; nothing is left at `args.output`.
    """
    started = time.monotonic()
    if args.output is not None:  # refuse a bad output before reading anything
        output_path(args.output, ctx.roots, overwrite=args.overwrite)
    limit = args.max_rows or (OUTPUT_ROWS_DEFAULT if args.output is not None else TABLE_ROWS_DEFAULT)
    check_query(args.query, set(args.layers))
    with connection(_inputs(args, ctx), ctx) as (con, loaded):
        crs = _common_crs(args, loaded) if args.output is not None else None
        at = len(loaded) / (len(loaded) + 1)
        kinds, table = run_query(con, args.query, limit + 1, args.timeout_s, ctx, at)
    ctx.progress(at, 1.0, f"query gave {min(table.num_rows, limit)} rows")
    truncated = table.num_rows > limit
    table = table.slice(0, limit)
    columns = [SqlColumn(name=n, type=k) for n, k in zip(table.column_names, kinds, strict=True)]
    layers = [SqlLayer(name=x.name, path=str(x.path), feature_count=x.feature_count, crs=x.crs) for x in loaded]
    common = {"columns": columns, "row_count": table.num_rows, "truncated": truncated, "layers": layers}
    if args.output is not None:
        written = write_rows(args.output, args.driver, args.overwrite, table, kinds, crs, ctx)
        return VectorSqlResult(**common, **written, elapsed_s=round(time.monotonic() - started, 3))
    cells = [_cells(table.column(i), kinds[i], args.geometry_format) for i in range(table.num_columns)]
    rows = [list(row) for row in zip(*cells, strict=True)] if cells else []
    return VectorSqlResult(**common, rows=rows, elapsed_s=round(time.monotonic() - started, 3))
