"""What a `stac_composite` reads: the items a search found, each with the hrefs of the asked assets (and of its mask
asset) and its extent on the output grid, and that grid: a CRS, a resolution and the area snapped to it.

The grid is chosen from the first item's first asset when not given: its CRS and pixel size, the area's corners
snapped outwards to whole pixels of that size from the CRS's origin, so a composite in the assets' own CRS and
resolution reads their pixels without resampling them.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shapely
from affine import Affine
from pydantic import JsonValue
from rasterio.crs import CRS
from rasterio.errors import CRSError
from rasterio.warp import transform_bounds

from geogate.settings import Settings
from schemas.tools.stac import StacCompositeArgs, StacItem, StacMask, StacSearchArgs
from workers.gdal.errors import open_raster
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import RemoteRaster
from workers.stac.search import search

WGS84 = "EPSG:4326"


@dataclass(frozen=True)
class Scene:
    """One item as the composite reads it: its assets' hrefs in output band order, its mask's, its extent."""

    id: str
    hrefs: list[str]
    mask: str | None
    bounds: tuple[float, float, float, float] | None
    """left, bottom, right, top on the output grid's CRS; None when the item has no bbox (read everywhere)."""

    def to_plan(self) -> dict[str, JsonValue]:
        hrefs: list[JsonValue] = list(self.hrefs)
        bounds: JsonValue = list(self.bounds) if self.bounds is not None else None
        return {"id": self.id, "hrefs": hrefs, "mask": self.mask, "bounds": bounds}

    @classmethod
    def from_plan(cls, plan: dict[str, Any]) -> "Scene":
        bounds = plan["bounds"]
        return cls(str(plan["id"]), [str(h) for h in plan["hrefs"]], plan["mask"], tuple(bounds) if bounds else None)

    def meets(self, bounds: tuple[float, float, float, float]) -> bool:
        """Whether the item's extent overlaps `bounds` (left, bottom, right, top)."""
        if self.bounds is None:
            return True
        left, bottom, right, top = self.bounds
        return left < bounds[2] and bounds[0] < right and bottom < bounds[3] and bounds[1] < top


@dataclass(frozen=True)
class Grid:
    """The output grid: CRS (WKT), transform, size; and the first asset's dtype and nodata."""

    crs: str
    transform: Affine
    width: int
    height: int
    dtype: str
    nodata: float | None


def found_items(args: StacSearchArgs, keys: list[str], mask: StacMask | None, settings: Settings) -> list[StacItem]:
    """The search's items, each holding every asset of `keys` (argument `assets`) and the mask's.

    Raises:
        JobFailed: what `stac_search` raises; on field `search`: `stac.no_items`, `stac.too_many_items` (more
            match than `limit`: a composite of some of them would say nothing of the rest), `stac.unavailable` (a
            page still failing, retryable); `stac.asset_missing` (field `assets`, or `mask`) naming the item and the
            asset.
    """
    found = search(args, settings)
    items = found.items
    if found.failed:
        failed = found.failed[0]
        message = f"search: the catalog's page {failed.url} still failed ({failed.reason}); its items would be missing"
        raise JobFailed("stac.unavailable", message, retryable=True, field="search")
    if found.more:
        message = f"search: more items match than its limit ({args.limit}); raise `limit` or narrow the search"
        raise JobFailed("stac.too_many_items", message, field="search")
    if not items:
        raise JobFailed("stac.no_items", "search: the search found no items", field="search")
    for item in items:
        wanted = [(key, "assets") for key in keys] + ([(mask.asset, "mask")] if mask else [])
        for key, field in wanted:
            if key not in item.assets:
                have = ", ".join(sorted(item.assets)) or "none"
                message = f"{field}: item {item.id!r} has no asset {key!r} (it has {have})"
                raise JobFailed("stac.asset_missing", message, field=field)
    return items


def scenes_of(items: list[StacItem], keys: list[str], mask_key: str | None, crs: str) -> list[Scene]:
    """Each item's hrefs of the assets `keys` and `mask_key`, and its bbox on `crs`."""
    scenes = []
    for item in items:
        hrefs = [item.assets[key].href for key in keys]
        mask = item.assets[mask_key].href if mask_key else None
        bounds = transform_bounds(WGS84, crs, *item.bbox[:2], *item.bbox[-2:], densify_pts=21) if item.bbox else None
        scenes.append(Scene(item.id, hrefs, mask, bounds))
    return scenes


def grid_of(args: StacCompositeArgs, first: Path | RemoteRaster) -> Grid:
    """The output grid, from the arguments and the first item's first asset.

    Raises:
        JobFailed: `crs.unknown` (field `crs`), `resolution.required` (a CRS unlike the asset's, no resolution),
            `area.empty` (field `bbox`), and what opening the asset raises.
    """
    own = asset_grid(first)
    crs = _crs(args.crs) if args.crs else own.crs
    if args.resolution is None and crs != own.crs:
        message = f"resolution: required when crs ({args.crs}) is not the assets' ({own.crs.to_string()})"
        raise JobFailed("resolution.required", message, field="resolution")
    bounds = transform_bounds(WGS84, crs, *_area(args), densify_pts=21)
    return snapped(own, crs, args.resolution or own.res, bounds, "bbox")


@dataclass(frozen=True)
class AssetGrid:
    """An asset's CRS, pixel size, dtype and nodata."""

    crs: CRS
    res: float
    dtype: str
    nodata: float | None


def asset_grid(first: Path | RemoteRaster) -> AssetGrid:
    """The first asset's grid, which the output's follows unless told otherwise.

    Raises:
        JobFailed: `crs.missing`, and what opening the asset raises.
    """
    with open_raster(first, "assets") as src:
        if src.crs is None:
            raise JobFailed("crs.missing", "assets: the first asset has no CRS", field="assets")
        return AssetGrid(src.crs, src.res[0], src.dtypes[0], src.nodata)


def snapped(own: AssetGrid, crs: CRS, res: float, bounds: tuple[float, ...], field: str) -> Grid:
    """A grid on `crs` of pixels of `res`, over `bounds` (in `crs`) snapped outwards to whole pixels from the CRS's
    origin; `own`'s dtype and nodata.

    Raises:
        JobFailed: `area.empty`, naming `field`.
    """
    left, bottom = math.floor(bounds[0] / res) * res, math.floor(bounds[1] / res) * res
    right, top = math.ceil(bounds[2] / res) * res, math.ceil(bounds[3] / res) * res
    width, height = round((right - left) / res), round((top - bottom) / res)
    if width < 1 or height < 1:
        raise JobFailed("area.empty", f"{field}: the area is less than a pixel on the grid", field=field)
    return Grid(crs.to_wkt(), Affine(res, 0, left, 0, -res, top), width, height, own.dtype, own.nodata)


def _crs(text: str) -> CRS:
    try:
        return CRS.from_user_input(text)
    except CRSError as exc:
        raise JobFailed("crs.unknown", f"crs: {text!r} is not a CRS GDAL knows", field="crs") from exc


def _area(args: StacCompositeArgs) -> list[float]:
    """The area in degrees: `bbox`, else the search's bbox, else its geometry's bounds."""
    box = args.bbox or args.search.bbox
    if box is not None:
        return list(box)
    return list(shapely.geometry.shape(args.search.intersects).bounds)
