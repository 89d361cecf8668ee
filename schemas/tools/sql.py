"""`vector_sql`, a read-only SQL query (DuckDB with its spatial extension) over named workspace layers, and
`vector_calculate`, a filter and field calculator on an allow-listed SQL expression grammar."""

from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from schemas import routes
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.raster import CrsText, GeoArgs, OutputRef, Uri
from schemas.tools.vector import VectorResult, VectorWriteArgs

LayerName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")]
"""A name the query uses for a layer: letters, digits and underscores, not starting with a digit."""

TABLE_ROWS = 10_000
"""The most rows a table in the result may hold."""


class SqlLayerRef(ToolArgs):
    """A layer given with the dataset's layer to read."""

    uri: Uri
    """The dataset (a workspace path)."""
    layer: str | None = Field(default=None, max_length=256)
    """The dataset's layer; the first one when omitted."""


class VectorSqlArgs(GeoArgs):
    query: str = Field(min_length=1, max_length=100_000)
    """One SELECT statement (CTEs allowed) over the layers by their names here; their geometry column is `geom`
    (type GEOMETRY) and the spatial extension's ST_ functions apply. Measures are in the layer's CRS units: for
    metres on geographic data use ST_Transform(geom, 'EPSG:4326', '<projected CRS>', always_xy := true), or the
    _Spheroid functions on ST_FlipCoordinates(geom) (they take latitude first)."""
    layers: dict[LayerName, Uri | SqlLayerRef] = Field(min_length=1, max_length=16)
    """The tables the query may read: name → a workspace dataset (GeoPackage, Shapefile, FlatGeobuf, GeoJSON,
    GeoParquet, …), or {uri, layer} for one layer of a multi-layer dataset."""
    output: Uri | None = None
    """Write the result as a layer here (GeoPackage, FlatGeobuf, GeoParquet, … by extension) instead of
    returning it as a table."""
    driver: str | None = Field(default=None, max_length=64)
    """Output driver; inferred from the output's extension (`.parquet` writes GeoParquet)."""
    overwrite: bool = False
    """Replace `output` if it exists."""
    crs: CrsText | None = None
    """CRS of the output's geometry; by default the layers' CRS when they share one."""
    max_rows: int | None = Field(default=None, ge=1, le=10_000_000)
    """The most result rows kept (the rest is dropped and `truncated` said): 100 by default and at most 10,000
    for a table; 1,000,000 by default for an output."""
    timeout_s: float = Field(default=60.0, gt=0, le=900)
    """The query is interrupted after this many seconds."""
    geometry_format: Literal["wkt", "geojson"] = "wkt"
    """How geometry values appear in a table: WKT text or GeoJSON objects."""

    @model_validator(mode="after")
    def _distinct_names(self) -> Self:
        names = [name.lower() for name in self.layers]
        if len(set(names)) != len(names):
            raise ValueError("layers: names must differ in more than letter case")
        if self.output is None and self.max_rows is not None and self.max_rows > TABLE_ROWS:
            raise ValueError(f"max_rows: a table holds at most {TABLE_ROWS:,} rows; pass output to write more")
        return self


class SqlColumn(ToolResult):
    name: str
    type: str
    """DuckDB's type name (GEOMETRY for a geometry)."""


class SqlLayer(ToolResult):
    name: str
    """The table name the query used."""
    path: str
    feature_count: int
    crs: str | None = None


class VectorSqlResult(ToolResult):
    columns: list[SqlColumn]
    """The result's columns, in order, with DuckDB's type names."""
    rows: list[list[Any]] = Field(default_factory=list)
    """The result's rows in column order (empty when written to `output`); geometry as WKT or GeoJSON."""
    row_count: int
    """Rows returned or written."""
    truncated: bool
    """The query gave more rows than `max_rows`; only the first were kept."""
    layers: list[SqlLayer]
    """The tables the layers became: name, source path, feature count, CRS."""
    output: OutputRef | None = None
    """The layer written, when `output` was given."""
    geometry_type: str | None = None
    """The output's layer geometry type."""
    crs: str | None = None
    """The output's CRS."""
    bounds: list[float] | None = None
    """minx, miny, maxx, maxy of the output."""
    elapsed_s: float
    """Seconds from the call's start to the answer: reading the layers, the query, writing."""

    def summary(self) -> str:
        more = " (truncated)" if self.truncated else ""
        if self.output is not None:
            return f"wrote {self.row_count} rows{more} to {self.output.path}"
        return f"{self.row_count} rows{more} of {len(self.columns)} columns"


VECTOR_SQL = ToolSpec(
    name="vector_sql",
    title="SQL over vector layers",
    description=(
        "Run one read-only SELECT (DuckDB with its spatial extension: ST_Intersects, ST_Area, ST_Transform, …) "
        "over workspace layers named in `layers`, each a table with its attributes and a `geom` column. Use it "
        "for attribute queries, counts, aggregates and spatial joins the other tools do not offer; the answer is "
        "a table, or a layer written to `output`. Only the named layers can be read: no file functions, COPY, "
        "ATTACH, INSTALL, LOAD, PRAGMA or SET."
    ),
    queue=routes.GDAL,
    args=VectorSqlArgs,
    result=VectorSqlResult,
    hints=Hints(destructive=True),
    timeout_s=1800.0,
    aliases={"sql": "query", "dst": "output", "output_path": "output"},
    runs_long=True,
    toolset="vector",
    examples=(
        {
            "query": "SELECT d.name, count(*) AS wells FROM districts d JOIN wells w ON ST_Within(w.geom, d.geom) "
            "GROUP BY d.name ORDER BY wells DESC",
            "layers": {"districts": "districts.gpkg", "wells": "wells.gpkg"},
        },
    ),
)


# --- vector_calculate -----------------------------------------------------------------------------------------

FieldName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")]


class VectorCalculateArgs(VectorWriteArgs):
    where: str | None = Field(default=None, min_length=1, max_length=4000)
    """Keep only the features where this is true, e.g. `population > 1000 AND area_m2(geom) < 5e6`."""
    fields: dict[FieldName, Annotated[str, Field(min_length=1, max_length=4000)]] = Field(
        default_factory=dict, max_length=64
    )
    """Fields to add or replace: name → expression over the layer's fields and `geom`, e.g.
    {"density": "population / (area_m2(geom) / 1e6)"}."""

    @model_validator(mode="after")
    def _something_to_do(self) -> Self:
        if self.where is None and not self.fields:
            raise ValueError("give where, fields or both")
        return self


class VectorCalculateResult(VectorResult):
    source_feature_count: int
    added: list[str] = Field(default_factory=list)
    """The fields the layer did not have."""
    replaced: list[str] = Field(default_factory=list)
    """The fields whose values were computed anew."""


VECTOR_CALCULATE = ToolSpec(
    name="vector_calculate",
    title="Filter features and calculate fields",
    description=(
        "Keep the features an expression selects and add or replace fields computed per feature, writing a new "
        "layer. Expressions are SQL on an allow-listed grammar: the layer's fields and `geom`, numbers and text, "
        "arithmetic, comparisons, AND/OR/NOT, IN, BETWEEN, LIKE, IS NULL, CASE, CAST, and per-feature functions "
        "(round, abs, sqrt, lower, concat, coalesce, ST_Area, ST_Intersects, … and the ellipsoid measures "
        "area_m2, length_m and perimeter_m, holes included, in any CRS). Anything else is refused naming the "
        "argument."
    ),
    queue=routes.GDAL,
    args=VectorCalculateArgs,
    result=VectorCalculateResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"path": "uri", "file": "uri", "input": "uri", "dst": "output", "output_path": "output"},
    runs_long=True,
    toolset="vector",
    examples=(
        {
            "uri": "districts.gpkg",
            "output": "large_districts.gpkg",
            "where": "area_m2(geom) > 10000",
            "fields": {"hectares": "round(area_m2(geom) / 10000, 2)"},
        },
    ),
)
