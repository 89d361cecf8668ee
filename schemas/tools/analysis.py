"""Analysis tools: `zonal_stats`, `raster_polygonize`, `vector_rasterize`, `raster_contours` (the pictures and
`cog_validate` are in `schemas.tools.previews`).

Raster inputs (`uri` of the raster tools) may be `http(s)://` URLs of COGs on a host in `GEOGATE_REMOTE_HOSTS`;
outputs always stay in the workspace.
"""

from typing import Annotated, Any, Literal, Self

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from schemas import routes
from schemas.tools.base import Hints, Reprojection, ToolResult, ToolSpec, reprojections_said
from schemas.tools.limits import FEATURES, OUTPUT_BYTES, READ_BYTES, TILES, ZONES, Bound
from schemas.tools.raster import GeoArgs, OutputRef, Uri

RasterUri = Annotated[str, Field(min_length=1, max_length=4096)]
"""A raster in the workspace, or an `https://` URL of a COG on an allowed host (`GEOGATE_REMOTE_HOSTS`)."""

ZonalStat = Literal["count", "min", "max", "mean", "sum", "std", "median", "majority"]
ALL_ZONAL_STATS: tuple[ZonalStat, ...] = ("count", "min", "max", "mean", "sum", "std", "median", "majority")


# --- zonal_stats ----------------------------------------------------------------------------------------------


class ZonalStatsArgs(GeoArgs):
    uri: RasterUri
    """Raster to summarise: a workspace path or an allowed `https://` COG URL."""
    zones: Uri
    """Polygon layer (GeoPackage, Shapefile, GeoJSON, …) in the workspace; reprojected to the raster's CRS if its
    CRS differs."""
    layer: str | None = Field(default=None, max_length=256)
    """Layer of `zones`; the first when omitted."""
    band: int = Field(default=1, ge=1)
    stats: list[ZonalStat] = Field(default_factory=lambda: list(ALL_ZONAL_STATS), min_length=1, max_length=8)
    """Statistics per polygon. count, sum, mean, std and median weigh each pixel by the fraction of it the polygon
    covers (exactextract); min, max and majority take every pixel the polygon covers any part of."""
    coverage_weight: Literal["fraction", "none"] = "fraction"
    """`fraction`: a pixel counts by the share of its area inside the polygon; `none`: every pixel the polygon
    touches counts whole."""
    id_field: str | None = Field(default=None, min_length=1, max_length=256)
    """Attribute that identifies a feature; the feature's position in the layer (0-based) when omitted."""
    output: Uri | None = None
    """Write the zones with their statistics as a new vector layer here (driver from the extension; missing
    folders are created in the workspace) instead of returning them per feature."""
    driver: str | None = Field(default=None, max_length=64)
    overwrite: bool = False


class ZoneStats(ToolResult):
    """One zone's statistics: only those asked for in `stats` are present (null when the zone covers no valid
    pixel)."""

    id: str | int
    """`id_field`'s value, or the feature's 0-based position."""
    count: float | None = None
    """Pixels covered (fractional with `coverage_weight='fraction'`)."""
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    sum: float | None = None
    std: float | None = None
    """Population standard deviation, coverage-weighted."""
    median: float | None = None
    majority: float | None = None
    """The value covering the most area."""

    @model_serializer(mode="wrap")
    def _asked_only(self, handler: SerializerFunctionWrapHandler):
        # no return annotation: pydantic then keeps the fields in the output schema instead of a bare object
        return {key: value for key, value in handler(self).items() if key in self.model_fields_set}


class ZonalStatsResult(ToolResult):
    band: int
    raster_crs: str | None
    zones_crs: str | None
    reprojected: list[Reprojection]
    """The zones, when they were transformed from their CRS into the raster's before extraction; else empty."""
    feature_count: int
    stats: list[str]
    coverage_weight: str
    features: list[ZoneStats] = Field(default_factory=list)
    """One entry per feature, in layer order (empty when written to `output`)."""
    output: OutputRef | None = None

    def summary(self) -> str:
        where = f"written to {self.output.path}" if self.output else "per feature below"
        said = reprojections_said(self.reprojected)
        return f"zonal statistics of band {self.band} for {self.feature_count} zones, {where}{said}"


# --- raster_polygonize, vector_rasterize, raster_contours ---------------------------------------------------------


class RasterToVectorArgs(GeoArgs):
    """What the tools that trace a raster band into a vector layer take."""

    uri: RasterUri
    """Raster to trace: a workspace path or an allowed `https://` COG URL."""
    output: Uri
    """Vector layer to write, inside the workspace (missing folders are created); the driver follows the extension
    unless given."""
    band: int = Field(default=1, ge=1)
    driver: str | None = Field(default=None, max_length=64)
    overwrite: bool = False


class RasterPolygonizeArgs(RasterToVectorArgs):
    connectivity: Literal[4, 8] = 4
    """4: pixels join across edges; 8: across corners too."""
    field_name: str = Field(default="value", min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Attribute that holds each polygon's pixel value."""


class VectorLayerResult(ToolResult):
    output: OutputRef
    feature_count: int
    crs: str | None

    def summary(self) -> str:
        return f"wrote {self.feature_count} features to {self.output.path}"


class RasterPolygonizeResult(VectorLayerResult):
    band: int
    connectivity: int
    distinct_values: int


class VectorRasterizeArgs(GeoArgs):
    uri: Uri
    """Vector layer to burn, in the workspace."""
    output: Uri
    """GeoTIFF to write, inside the workspace; missing folders are created there."""
    layer: str | None = Field(default=None, max_length=256)
    burn_value: float | None = None
    """Value burnt where a geometry is; give this or `attribute`."""
    attribute: str | None = Field(default=None, min_length=1, max_length=256)
    """Numeric attribute whose value each feature burns."""
    resolution: list[Annotated[float, Field(gt=0)]] | None = Field(default=None, min_length=2, max_length=2)
    """Pixel size [x, y] in the layer's CRS units over the layer's extent; give this or `like`."""
    like: Uri | None = None
    """A raster whose grid (CRS, transform, size) the output takes; the layer is reprojected to it."""
    all_touched: bool = False
    """Burn every pixel a geometry touches, not only those whose centre it covers."""
    dtype: Literal["uint8", "int16", "uint16", "int32", "float32", "float64"] = "float32"
    nodata: float = 0
    """Value of pixels no geometry covers (also the file's nodata)."""
    overwrite: bool = False

    @model_validator(mode="after")
    def _one_of_each(self) -> Self:
        if (self.burn_value is None) == (self.attribute is None):
            raise ValueError("give exactly one of burn_value or attribute")
        if (self.resolution is None) == (self.like is None):
            raise ValueError("give exactly one of resolution or like")
        return self


class VectorRasterizeResult(ToolResult):
    output: OutputRef
    width: int
    height: int
    crs: str | None
    transform: list[float]
    burned_pixels: int
    """Pixels that got a value other than `nodata`."""
    feature_count: int
    reprojected: list[Reprojection] = Field(default_factory=list)
    """The layer (`uri`), when it was transformed from its CRS into `like`'s before burning; else empty."""

    def summary(self) -> str:
        said = reprojections_said(self.reprojected)
        return f"burnt {self.feature_count} features into {self.width}×{self.height} pixels, {self.output.path}{said}"


class RasterContoursArgs(RasterToVectorArgs):
    interval: float | None = Field(default=None, gt=0)
    """Distance between levels; levels are `base + k·interval` within the data's range. Give this or `levels`."""
    base: float = 0.0
    levels: list[float] | None = Field(default=None, min_length=1, max_length=1000)
    """Exact levels to trace."""
    attribute: str = Field(default="level", min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    max_levels: int = Field(default=1000, ge=1, le=10_000)
    """Refuse an interval that makes more levels than this."""

    @model_validator(mode="after")
    def _interval_or_levels(self) -> Self:
        if (self.interval is None) == (self.levels is None):
            raise ValueError("give exactly one of interval or levels")
        return self


class RasterContoursResult(VectorLayerResult):
    levels: list[float]
    """Levels traced (those with at least one line)."""
    method: str


# --- specs ----------------------------------------------------------------------------------------------------

READS = Hints(read_only=True, idempotent=True)
WRITES = Hints(destructive=True)
_RASTER_ALIASES = {"path": "uri", "file": "uri", "input": "uri", "dst": "output", "output_path": "output"}


def analysis_spec(
    name: str,
    title: str,
    description: str,
    args: type[GeoArgs],
    result: type[ToolResult],
    hints: Hints,
    *,
    runs_long: bool = False,
    bounds: tuple[Bound, ...] = (),
    tiled: bool = False,
    examples: tuple[dict[str, Any], ...] = (),
    app: str | None = None,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        queue=routes.GDAL,
        args=args,
        result=result,
        hints=hints,
        timeout_s=3600.0,
        aliases=_RASTER_ALIASES,
        runs_long=runs_long,
        bounds=bounds,
        tiled=tiled,
        examples=examples,
        app=app,
    )


ZONAL_STATS = analysis_spec(
    "zonal_stats",
    "Zonal statistics",
    "Statistics of a raster band per polygon of a vector layer (count, min, max, mean, sum, std, median, "
    "majority), weighing partly covered pixels by their covered fraction (exactextract). Use it for 'mean "
    "elevation per district' questions. Returns one entry per feature, or writes the zones with their statistics "
    "to `output`. Zones in another CRS are reprojected to the raster's.",
    ZonalStatsArgs,
    ZonalStatsResult,
    Hints(),  # reads only, unless `output` is given: then it writes a new file (replacing one only on overwrite)
    runs_long=True,
    bounds=(ZONES,),
    examples=({"uri": "dem.tif", "zones": "districts.gpkg", "stats": ["mean", "max"]},),
)
RASTER_POLYGONIZE = analysis_spec(
    "raster_polygonize",
    "Polygonize a raster",
    "Trace connected areas of equal pixel value into polygons with the value as an attribute (nodata and masked "
    "pixels skipped; 4- or 8-connectivity). Use it to turn a classification into vector areas.",
    RasterPolygonizeArgs,
    RasterPolygonizeResult,
    WRITES,
    runs_long=True,
    bounds=(READ_BYTES, FEATURES),
    tiled=True,
    examples=({"uri": "landcover.tif", "output": "landcover.gpkg"},),
)
VECTOR_RASTERIZE = analysis_spec(
    "vector_rasterize",
    "Rasterize a vector layer",
    "Burn a layer's geometries into a GeoTIFF: a fixed value or a numeric attribute, on a grid of a given "
    "resolution over the layer, or on the grid of another raster (`like`). Use it to make masks or to combine "
    "vector data with rasters.",
    VectorRasterizeArgs,
    VectorRasterizeResult,
    WRITES,
    runs_long=True,
    bounds=(TILES, OUTPUT_BYTES),
    examples=({"uri": "lakes.gpkg", "output": "lakes_mask.tif", "burn_value": 1, "like": "dem.tif"},),
)
RASTER_CONTOURS = analysis_spec(
    "raster_contours",
    "Contour lines",
    "Trace contour lines of a raster (a DEM) at a fixed interval or at given levels into a line layer with the "
    "level as an attribute; nodata is left out. Use it to draw elevation lines or isolines of any surface.",
    RasterContoursArgs,
    RasterContoursResult,
    WRITES,
    runs_long=True,
    bounds=(READ_BYTES, FEATURES),
    tiled=True,
    examples=({"uri": "dem.tif", "output": "contours.gpkg", "interval": 50},),
)
