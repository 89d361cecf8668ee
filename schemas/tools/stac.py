"""The `stac_search` tool: items of a STAC API on an allowed host (`GEOGATE_STAC_CATALOGS`), summarised.

Found assets are `http(s)://` hrefs; the raster tools read those on a host in `GEOGATE_REMOTE_HOSTS`.
"""

from typing import Annotated, Any, Self

from pydantic import Field, model_validator

from schemas import routes
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.limits import STAC_ITEMS

Name = Annotated[str, Field(min_length=1, max_length=256)]


class StacSearchArgs(ToolArgs):
    catalog: str = Field(min_length=1, max_length=2048, pattern="^https?://")
    """Root URL of a STAC API on a host in GEOGATE_STAC_CATALOGS."""
    collections: list[Name] | None = Field(default=None, min_length=1, max_length=32)
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
