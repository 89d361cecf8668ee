"""The `stac_search` tool: items of a STAC API on an allowed host (`GEOGATE_STAC_CATALOGS`), summarised.

Found assets are `http(s)://` hrefs; the raster tools read those on a host in `GEOGATE_REMOTE_HOSTS`.
"""

from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from schemas import routes
from schemas.preflight.justification import PreflightSpec
from schemas.tools.analysis import ZonalStat, ZoneStats
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.limits import OUTPUT_BYTES, STAC_ITEMS, TILES, ZONES
from schemas.tools.raster import CrsText, OutputRef, Resampling, Uri, WarpResampling

Name = Annotated[str, Field(min_length=1, max_length=256)]


class StacSearchArgs(ToolArgs):
    catalog: str = Field(min_length=1, max_length=2048, pattern="^https?://")
    """Root URL of a STAC API on a host in GEOGATE_STAC_CATALOGS."""
    collections: list[Name] | None = Field(default=None, min_length=1, max_length=32)
    ids: list[Name] | None = Field(default=None, min_length=1, max_length=500)
    """Item ids: the items of an earlier search."""
    bbox: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """[west, south, east, north], degrees."""
    intersects: dict[str, Any] | None = None
    """A GeoJSON geometry (degrees) items must intersect; instead of `bbox`."""
    datetime: str | None = Field(default=None, max_length=64)
    """RFC 3339 instant or interval: `2024-06-01/2024-06-30`, `../2024-06-30`."""
    filter: dict[str, Any] | str | None = None
    """CQL2 filter: JSON object or text (`eo:cloud_cover < 20`)."""
    query: dict[str, dict[str, Any]] | None = None
    """Query extension: `{"eo:cloud_cover": {"lt": 20}}`."""
    sortby: list[Name] | None = Field(default=None, max_length=8)
    """Fields, `-` first for descending: `["-properties.datetime"]`."""
    limit: int = Field(default=20, ge=1, le=10_000)
    """Items to return, over as many pages as needed."""
    page_size: int | None = Field(default=None, ge=1, le=1000)
    """Items per request; default min(limit, 100)."""

    @model_validator(mode="after")
    def _one_area(self) -> Self:
        if self.bbox is not None and self.intersects is not None:
            raise ValueError("give bbox or intersects, not both")
        if self.bbox is not None and self.bbox[1] > self.bbox[3]:
            raise ValueError("bbox: south is above north")
        return self


class StacAsset(ToolResult):
    href: str
    type: str | None = None
    roles: list[str] = Field(default_factory=list)


class StacItem(ToolResult):
    id: str
    collection: str | None = None
    datetime: str | None = None
    cloud_cover: float | None = None
    """`eo:cloud_cover`, percent."""
    bbox: list[float] | None = None
    footprint: dict[str, Any] | None = None
    """GeoJSON geometry, simplified past 64 vertices."""
    assets: dict[str, StacAsset] = Field(default_factory=dict)


class StacFailure(ToolResult):
    url: str
    status: int | None
    """HTTP status; None when no answer came (timeout, refused)."""
    attempts: int
    reason: str


class StacSearchResult(ToolResult):
    catalog: str
    items: list[StacItem]
    matched: int | None = None
    """Items the API says match (`numberMatched`), when it counts."""
    more: bool
    """More items match than returned."""
    pages: int
    retries: int
    """Requests retried after a transient failure."""
    failed: list[StacFailure] = Field(default_factory=list)
    """Page requests still failing after their retries; their items are missing."""
    unreadable_hosts: list[str] = Field(default_factory=list)
    """Asset hosts not in GEOGATE_REMOTE_HOSTS: raster tools cannot read those hrefs."""

    def summary(self) -> str:
        counted = f" of {self.matched}" if self.matched is not None else (" and more" if self.more else "")
        failed = f"; {len(self.failed)} page(s) failed" if self.failed else ""
        return f"{len(self.items)} item(s){counted} from {self.catalog} in {self.pages} page(s){failed}"


STAC_SEARCH = ToolSpec(
    name="stac_search",
    title="Search a STAC catalog",
    description=(
        "Find imagery in a STAC API: by collections, bbox or geometry, datetime, CQL2 filter, query, sort. Returns "
        "each item's id, datetime, cloud cover, footprint and assets (href, type, roles); raster tools read asset "
        "hrefs on a GEOGATE_REMOTE_HOSTS host. Transient failures are retried; pages still failing are named."
    ),
    queue=routes.GDAL,
    args=StacSearchArgs,
    result=StacSearchResult,
    hints=Hints(read_only=True, idempotent=True, open_world=True),
    timeout_s=180.0,
    bounds=(STAC_ITEMS,),
    examples=(
        {
            "catalog": "https://earth-search.aws.element84.com/v1",
            "collections": ["sentinel-2-l2a"],
            "bbox": [11.0, 46.0, 11.5, 46.5],
            "datetime": "2024-06-01/2024-06-30",
            "filter": "eo:cloud_cover < 20",
            "limit": 5,
        },
    ),
    example_result={
        "catalog": "https://earth-search.aws.element84.com/v1",
        "items": [
            {
                "id": "S2B_32TPS_20240612_0_L2A",
                "collection": "sentinel-2-l2a",
                "datetime": "2024-06-12T10:17:42Z",
                "cloud_cover": 3.2,
                "bbox": [10.33, 45.93, 11.79, 46.94],
                "footprint": {
                    "type": "Polygon",
                    "coordinates": [[[10.33, 45.93], [11.79, 45.95], [11.77, 46.94], [10.33, 46.92], [10.33, 45.93]]],
                },
                "assets": {
                    "red": {
                        "href": "https://sentinel-cogs.s3.us-west-2.amazonaws.com/…/B04.tif",
                        "type": "image/tiff; application=geotiff; profile=cloud-optimized",
                        "roles": ["data", "reflectance"],
                    }
                },
            }
        ],
        "matched": 4,
        "more": False,
        "pages": 1,
        "retries": 0,
        "failed": [],
        "unreadable_hosts": [],
    },
)


SUMMER_SEARCH = {
    "catalog": "https://earth-search.aws.element84.com/v1",
    "collections": ["sentinel-2-l2a"],
    "bbox": [11.0, 46.0, 11.1, 46.1],
    "datetime": "2024-06-01/2024-08-31",
}
"""The search the composite's and the series' examples use."""

Reducer = Literal["median", "mean", "min", "max", "first", "count"]


class StacMask(ToolArgs):
    asset: Name
    """Quality or classification asset (Sentinel-2's `SCL`)."""
    drop: list[int] = Field(min_length=1, max_length=64)
    """Its values whose pixels are left out (SCL: 3 shadow, 8 and 9 cloud, 10 cirrus)."""


class StacCompositeArgs(ToolArgs):
    search: StacSearchArgs
    """The search whose items are composited (`ids` picks items of an earlier one)."""
    assets: list[Name] = Field(min_length=1, max_length=16)
    """Asset keys, one output band each."""
    bbox: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """Area [west, south, east, north], degrees; default the search's bbox or geometry's bounds."""
    crs: CrsText | None = None
    """Output CRS; default the first item's first asset's."""
    resolution: float | None = Field(default=None, gt=0)
    """Pixel size in CRS units; default the first asset's (given a `crs` unlike it: required)."""
    reducer: Reducer = "median"
    """Per pixel across the items: median, mean, min, max, first valid (search order), count of valid."""
    mask: StacMask | None = None
    resampling: WarpResampling = Resampling.nearest
    output: Uri
    """COG to write in the workspace."""
    overwrite: bool = False

    @model_validator(mode="after")
    def _an_area(self) -> Self:
        area = self.bbox or self.search.bbox or self.search.intersects
        if area is None:
            raise ValueError("bbox: give the area (or a search bbox or intersects)")
        if self.bbox is not None and (self.bbox[0] >= self.bbox[2] or self.bbox[1] >= self.bbox[3]):
            raise ValueError("bbox: west must be below east and south below north")
        return self


class StacCompositeResult(ToolResult):
    output: OutputRef
    crs: str
    width: int
    height: int
    resolution: list[float]
    bounds: list[float]
    """left, bottom, right, top in `crs`."""
    bands: list[str]
    """The asset of each band."""
    reducer: str
    items: list[str]
    """Ids of the items composited, in search order."""
    valid_pixels: int
    """Pixels with a value, over every band."""

    def summary(self) -> str:
        shape = f"{self.width}×{self.height}×{len(self.bands)}"
        return f"{self.reducer} of {len(self.items)} item(s), {shape} → {self.output.path}"


STAC_COMPOSITE = ToolSpec(
    name="stac_composite",
    title="Composite STAC imagery",
    description=(
        "Reduce the assets of a STAC search's items per pixel across time (median, mean, min, max, first valid, "
        "count) over an area onto one grid, dropping pixels a classification asset marks (clouds) and nodata; "
        "reads only the COG blocks the area needs. Writes a COG, one band per asset."
    ),
    queue=routes.GDAL,
    args=StacCompositeArgs,
    result=StacCompositeResult,
    hints=Hints(destructive=True, open_world=True),
    timeout_s=3600.0,
    tiled=True,
    runs_long=True,
    bounds=(STAC_ITEMS, TILES, OUTPUT_BYTES),
    preflight=(PreflightSpec(domain="resampling", prompt="justify_resampling_method", args={"method": "resampling"}),),
    examples=(
        {
            "search": SUMMER_SEARCH,
            "assets": ["red", "nir"],
            "mask": {"asset": "scl", "drop": [3, 8, 9, 10]},
            "resolution": 10,
            "output": "summer_median.tif",
        },
    ),
    example_result={
        "output": {
            "uri": "file:///data/summer_median.tif",
            "path": "/data/summer_median.tif",
            "size": 2841764,
            "sha256": "9f2c6e1d4b8a7f3e0c5d2a1b6e9f8c7d4a3b2e1f0c9d8e7f6a5b4c3d2e1f0a9b",
            "driver": "GTiff",
        },
        "crs": "EPSG:32632",
        "width": 781,
        "height": 1113,
        "resolution": [10.0, 10.0],
        "bounds": [578760.0, 5094180.0, 586570.0, 5105310.0],
        "bands": ["red", "nir"],
        "reducer": "median",
        "items": ["S2B_32TPS_20240831_0_L2A", "S2A_32TPS_20240806_0_L2A", "S2B_32TPS_20240612_0_L2A"],
        "valid_pixels": 1738426,
    },
)


class StacZonalSeriesArgs(ToolArgs):
    search: StacSearchArgs
    """The search whose items make the series (`ids` picks items of an earlier one)."""
    asset: Name
    """Asset key to summarise (one band)."""
    zones: Uri
    """Polygon layer in the workspace."""
    layer: str | None = Field(default=None, max_length=256)
    id_field: str | None = Field(default=None, min_length=1, max_length=256)
    """Attribute naming each zone; its 0-based position when omitted."""
    mask: StacMask | None = None
    stats: list[ZonalStat] = Field(default_factory=lambda: ["mean", "count"], min_length=1, max_length=8)
    """Per zone and date, pixels weighed by the share of them the zone covers (exactextract)."""


class SeriesRow(ZoneStats):
    date: str
    """The items' date (UTC day): items of one day are mosaicked, the first in search order on top."""
    items: list[str]


class StacZonalSeriesResult(ToolResult):
    asset: str
    crs: str
    """The asset's CRS, where the zones were measured."""
    resolution: float
    dates: list[str]
    feature_count: int
    stats: list[str]
    rows: list[SeriesRow]
    """One per zone and date, dates in order, zones in layer order within each."""

    def summary(self) -> str:
        return f"{self.asset}: {self.feature_count} zone(s) × {len(self.dates)} date(s) = {len(self.rows)} row(s)"


STAC_ZONAL_SERIES = ToolSpec(
    name="stac_zonal_series",
    title="Zonal time series of STAC imagery",
    description=(
        "Statistics of one asset per polygon and per date of a STAC search's items (a table of zone × date): the "
        "items of a day mosaicked on the asset's grid, pixels a classification asset marks (clouds) and nodata "
        "left out; reads only the COG blocks under the zones."
    ),
    queue=routes.GDAL,
    args=StacZonalSeriesArgs,
    result=StacZonalSeriesResult,
    hints=Hints(read_only=True, idempotent=True, open_world=True),
    timeout_s=3600.0,
    runs_long=True,
    bounds=(STAC_ITEMS, ZONES, OUTPUT_BYTES),
    examples=(
        {
            "search": SUMMER_SEARCH,
            "asset": "nir",
            "zones": "fields.gpkg",
            "id_field": "name",
            "mask": {"asset": "scl", "drop": [3, 8, 9, 10]},
        },
    ),
    example_result={
        "asset": "nir",
        "crs": "EPSG:32632",
        "resolution": 10.0,
        "dates": ["2024-06-12", "2024-08-06"],
        "feature_count": 1,
        "stats": ["mean", "count"],
        "rows": [
            {
                "id": "north",
                "date": "2024-06-12",
                "items": ["S2B_32TPS_20240612_0_L2A"],
                "mean": 3012.4,
                "count": 812.0,
            },
            {
                "id": "north",
                "date": "2024-08-06",
                "items": ["S2A_32TPS_20240806_0_L2A"],
                "mean": 2688.9,
                "count": 377.5,
            },
        ],
    },
)
