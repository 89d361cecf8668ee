"""A DuckDB connection that holds the named layers as tables and can reach nothing else.

The spatial extension is the file shipped in the `duckdb-extension-spatial` package, loaded by path on a connection
made with extension auto-install and auto-load off: nothing is downloaded. Each layer is read by the worker
(pyogrio to Arrow for a GDAL format, pyarrow for GeoParquet), through the pinned, checked path every input takes,
and copied into an in-memory table with its geometry as GEOMETRY. Then the connection loses file access
(`enable_external_access=false`) and its configuration is locked, with bounded memory and threads.
"""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import duckdb_extension_spatial
import geopandas
import pandas
import pyarrow as pa
import pyogrio
import shapely
from pyproj import CRS

from workers.gdal import geoparquet
from workers.gdal.errors import reading
from workers.gdal.vector_io import NO_ARROW, layer_name
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed

MEMORY_LIMIT = "2GB"
"""DuckDB's memory bound for one query."""
THREADS = 2
"""DuckDB's threads for one query."""
GEOMETRY = "geom"
"""The geometry column of every layer table (`geometry` when the layer has a field named `geom`)."""

_SPATIAL = next(Path(duckdb_extension_spatial.__file__).parent.rglob("*.duckdb_extension"))
_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
    "memory_limit": MEMORY_LIMIT,
    "threads": THREADS,
}


@dataclass(frozen=True)
class LoadedLayer:
    """A layer copied into the connection: its table name, source, feature count and CRS."""

    name: str
    path: Path
    feature_count: int
    crs: str | None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _crs_text(crs: object) -> str | None:
    if crs is None:
        return None
    parsed = CRS.from_user_input(crs)
    found = parsed.to_authority()
    return f"{found[0]}:{found[1]}" if found else parsed.to_wkt()


def _read_gdal(path: Path, layer: str | None, field: str) -> tuple[pa.Table, str | None, str | None]:
    name = layer_name(path, layer, field)
    with reading(path, field):
        if pyogrio.read_info(pinned(path, field), layer=name)["driver"] in NO_ARROW:
            return _read_features(path, name, field)
        meta, table = pyogrio.read_arrow(pinned(path, field), layer=name)
    geometry = meta.get("geometry_name") or "wkb_geometry"
    return table, (geometry if geometry in table.column_names else None), meta.get("crs")


def _read_features(path: Path, name: str, field: str) -> tuple[pa.Table, str | None, str | None]:
    """A layer read feature by feature (`NO_ARROW`), as the Arrow table `_read_gdal` gives: WKB in `wkb_geometry`."""
    frame = pyogrio.read_dataframe(pinned(path, field), layer=name, use_arrow=False)
    if not isinstance(frame, geopandas.GeoDataFrame):
        return pa.Table.from_pandas(frame, preserve_index=False), None, None
    attributes = pa.Table.from_pandas(pandas.DataFrame(frame.drop(columns=frame.geometry.name)), preserve_index=False)
    wkb = pa.array(shapely.to_wkb(frame.geometry.values), type=pa.binary())
    crs = frame.crs.to_string() if frame.crs is not None else None
    return attributes.append_column("wkb_geometry", wkb), "wkb_geometry", crs


def _read_parquet(path: Path, field: str) -> tuple[pa.Table, str | None, str | None]:
    table = geoparquet.read_table(path, field)
    geo = json.loads((table.schema.metadata or {}).get(b"geo", b"{}"))
    column = geo.get("primary_column")
    if column is None:
        return table, None, None
    spec = geo.get("columns", {}).get(column, {})
    if str(spec.get("encoding", "WKB")).upper() != "WKB":
        message = f"{field}: {path.name!r} stores geometry as {spec['encoding']}; only WKB GeoParquet is read"
        raise JobFailed("gdal.corrupt", message, field=field)
    crs = spec.get("crs", "OGC:CRS84")
    return table, column, None if crs is None else json.dumps(crs) if isinstance(crs, dict) else str(crs)


def _insert(con: duckdb.DuckDBPyConnection, name: str, table: pa.Table, geometry: str | None) -> None:
    """Copy `table` into the connection as `name`, its `geometry` column (WKB) renamed `geom` and typed GEOMETRY."""
    source = f"_geogate_source_{name}"
    con.register(source, table)
    try:
        if geometry is None:
            con.execute(f"CREATE TABLE {_quoted(name)} AS SELECT * FROM {_quoted(source)}")
            return
        target = GEOMETRY if GEOMETRY not in table.column_names or geometry == GEOMETRY else "geometry"
        kind = {
            r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT {_quoted(geometry)} FROM {_quoted(source)}").fetchall()
        }
        value = (
            _quoted(geometry)
            if kind.get(geometry, "").startswith("GEOMETRY")
            else f"ST_GeomFromWKB({_quoted(geometry)})"
        )
        con.execute(
            f"CREATE TABLE {_quoted(name)} AS SELECT * EXCLUDE ({_quoted(geometry)}), {value} AS {_quoted(target)} "
            f"FROM {_quoted(source)}"
        )
    except duckdb.Error as exc:
        raise JobFailed(
            "gdal.corrupt", f"layers.{name}: the layer could not be loaded: {exc}", field=f"layers.{name}"
        ) from exc
    finally:
        con.unregister(source)


def load_layer(con: duckdb.DuckDBPyConnection, name: str, path: Path, layer: str | None) -> LoadedLayer:
    """Read one layer and copy it into the connection as the table `name`.

    Raises:
        JobFailed: the dataset cannot be read, has no such layer, or stores geometry other than WKB; each naming
            `layers.<name>`.
    """
    field = f"layers.{name}"
    if geoparquet.is_parquet(path):
        table, geometry, crs = _read_parquet(path, field)
    else:
        try:
            table, geometry, crs = _read_gdal(path, layer, field)
        except JobFailed as exc:  # an unknown dataset layer is said about `layer`: here it is this layer's
            if exc.field == field:
                raise
            raise JobFailed(exc.code, f"{field}.{exc.message}", field=field) from exc
    _insert(con, name, table, geometry)
    return LoadedLayer(name, path, table.num_rows, _crs_text(crs))


@contextmanager
def connection(
    layers: dict[str, tuple[Path, str | None]], ctx: JobContext
) -> Iterator[tuple[duckdb.DuckDBPyConnection, list[LoadedLayer]]]:
    """A connection holding `layers` (name → checked path and dataset layer) as tables, then locked: no file
    access, no configuration change. Closed after the block.

    Raises:
        JobFailed: what `load_layer` raises.
    """
    con = duckdb.connect(":memory:", config=_CONFIG)
    try:
        con.execute(f"LOAD '{str(_SPATIAL).replace(chr(39), chr(39) * 2)}'")
        loaded = []
        for done, (name, (path, layer)) in enumerate(layers.items(), 1):
            loaded.append(load_layer(con, name, path, layer))
            ctx.progress(done / (len(layers) + 1), 1.0, f"loaded layer {name}")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        yield con, loaded
    finally:
        con.close()


WAIT_S = 0.25
"""How often a running query's caller reports progress (which renews the lease and checks for cancellation)."""


def run_query(
    con: duckdb.DuckDBPyConnection, query: str, limit: int, seconds: float, ctx: JobContext, at: float
) -> tuple[list[str], pa.Table]:
    """The column types and at most `limit` rows of `query`, run in a thread of its own: this one reports progress
    (`at`, a fraction of the call) while it runs and interrupts it when the call is cancelled or `seconds` have
    passed.

    Raises:
        JobFailed: `query.timeout` (naming `timeout_s`), or `query.failed` with DuckDB's message (naming `query`).
        JobCancelled: the call was cancelled while the query ran.
    """
    answer: dict[str, object] = {}

    def work() -> None:
        try:
            relation = con.sql(query)
            if relation is None:
                raise JobFailed("query.refused", "query: the statement gave no rows", field="query")
            answer["kinds"] = [str(kind) for kind in relation.types]
            answer["table"] = relation.limit(limit).to_arrow_table()
        except BaseException as exc:  # handed to the caller's thread
            answer["error"] = exc

    thread = threading.Thread(target=work, name="vector_sql", daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        while thread.is_alive():
            thread.join(WAIT_S)
            if time.monotonic() - started > seconds and thread.is_alive():
                con.interrupt()
                thread.join()
                break
            ctx.progress(at, 1.0, f"query running for {time.monotonic() - started:.0f} s")
    except BaseException:
        con.interrupt()
        thread.join()
        raise
    error = answer.get("error")
    if isinstance(error, duckdb.InterruptException) or (error is None and "table" not in answer):
        message = f"timeout_s: the query was stopped after {seconds:g} s; narrow it or raise timeout_s (at most 900)"
        raise JobFailed("query.timeout", message, field="timeout_s") from error
    if isinstance(error, duckdb.Error):
        raise JobFailed("query.failed", f"query: {error}", field="query") from error
    if isinstance(error, BaseException):
        raise error
    return answer["kinds"], answer["table"]  # type: ignore[return-value]
