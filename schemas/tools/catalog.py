"""Internal jobs behind the catalog and metadata resources: `catalog_scan` and `dataset_format` (not in tools/list)."""

from typing import Annotated, Literal

from pydantic import Field

from schemas import routes
from schemas.tools.base import Hints, ToolResult, ToolSpec
from schemas.tools.raster import CrsText, GeoArgs

CatalogKind = Literal["all", "raster", "vector"]
DatasetKind = Literal["raster", "vector"]

RASTER_EXTENSIONS: frozenset[str] = frozenset(
    {".tif", ".tiff", ".cog", ".vrt", ".img", ".jp2", ".j2k", ".asc", ".bil", ".bip", ".bsq", ".ers", ".hdf",
     ".h5", ".nc", ".grd", ".dem", ".sdat", ".png", ".jpg", ".jpeg", ".webp"}
)  # fmt: skip
"""Suffixes the catalog lists as rasters (gdal-mcp's list, plus the image formats `raster_convert` writes)."""
VECTOR_EXTENSIONS: frozenset[str] = frozenset(
    {".gpkg", ".geojson", ".shp", ".sqlite", ".kml", ".kmz", ".gml", ".tab", ".mif", ".fgb", ".parquet",
     ".geoparquet", ".geojsonl", ".geojsons"}
)  # fmt: skip
"""Suffixes the catalog lists as vector datasets (`.json` is left out: most JSON files are not geodata)."""


class CatalogScanArgs(GeoArgs):
    kind: CatalogKind = "all"
    """Which datasets to list."""
    subpath: str = Field(default="", max_length=4096)
    """A folder inside the workspace to list; every root when empty or '.'."""
    limit: int = Field(default=1000, ge=1, le=20_000)
    """At most this many entries."""
    include_hidden: bool = False
    """Also descend into dot-folders and list dot-files (temporary outputs are dot-files)."""
    extensions: list[Annotated[str, Field(min_length=1, max_length=16)]] | None = Field(default=None, max_length=64)
    """Only these suffixes (e.g. ['.tif', '.gpkg'])."""
    crs: CrsText | None = None
    """Only datasets in this CRS (compared as PROJ CRSs, so 'EPSG:4326' matches its WKT)."""
    details: bool = True
    """Open each dataset to report its driver and CRS (slower on large folders)."""


class CatalogEntry(ToolResult):
    path: str
    """Absolute path."""
    relative: str
    """Path relative to its workspace root: what tools and `metadata://` URIs take."""
    kind: DatasetKind
    size: int
    driver: str | None = None
    crs: str | None = None
    error: str | None = None
    """Why the dataset could not be opened, when `details` was asked for."""


class CatalogScanResult(ToolResult):
    kind: CatalogKind
    entries: list[CatalogEntry]
    total: int
    truncated: bool
    """True when `limit` cut the listing short."""
    roots: list[str]

    def summary(self) -> str:
        more = " (truncated)" if self.truncated else ""
        return f"{self.total} {self.kind} datasets{more}"


class DatasetFormatArgs(GeoArgs):
    uri: str = Field(min_length=1, max_length=4096)
    """Dataset path (a workspace path)."""


class DatasetFormatResult(ToolResult):
    path: str
    kind: DatasetKind
    driver: str
    crs: str | None
    size: int
    extension: str
    layers: list[str] = Field(default_factory=list)
    """Vector layers (empty for rasters)."""
    width: int | None = None
    height: int | None = None
    count: int | None = None
    """Raster band count."""

    def summary(self) -> str:
        return f"{self.kind} {self.driver}, CRS {self.crs or 'none'}"


CATALOG_SCAN = ToolSpec(
    name="catalog_scan",
    title="Workspace catalog",
    description="List the raster and vector datasets in the workspace roots, with driver and CRS.",
    queue=routes.GDAL,
    args=CatalogScanArgs,
    result=CatalogScanResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=120.0,
    internal=True,
)

DATASET_FORMAT = ToolSpec(
    name="dataset_format",
    title="Dataset format",
    description="Detect whether a file is a raster or a vector dataset and which GDAL driver reads it.",
    queue=routes.GDAL,
    args=DatasetFormatArgs,
    result=DatasetFormatResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=60.0,
    internal=True,
)
