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
from schemas.tools.stac import StacCompositeArgs, StacItem
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


def found_items(args: StacCompositeArgs, settings: Settings) -> list[StacItem]:
    """The search's items, each holding every asked asset and the mask's.

    Raises:
        JobFailed: what `stac_search` raises; `stac.no_items` (field `search`); `stac.asset_missing` (field
            `assets`, or `mask`) naming the item and the asset.
    """
    items = search(args.search, settings).items
    if not items:
        raise JobFailed("stac.no_items", "search: the search found no items to composite", field="search")
    for item in items:
        wanted = [(key, "assets") for key in args.assets] + ([(args.mask.asset, "mask")] if args.mask else [])
        for key, field in wanted:
            if key not in item.assets:
                have = ", ".join(sorted(item.assets)) or "none"
                message = f"{field}: item {item.id!r} has no asset {key!r} (it has {have})"
                raise JobFailed("stac.asset_missing", message, field=field)
    return items


def scenes_of(items: list[StacItem], args: StacCompositeArgs, crs: str) -> list[Scene]:
    """Each item's asset hrefs and its bbox on `crs`."""
    scenes = []
    for item in items:
        hrefs = [item.assets[key].href for key in args.assets]
        mask = item.assets[args.mask.asset].href if args.mask else None
        bounds = transform_bounds(WGS84, crs, *item.bbox[:2], *item.bbox[-2:], densify_pts=21) if item.bbox else None
        scenes.append(Scene(item.id, hrefs, mask, bounds))
    return scenes


def grid_of(args: StacCompositeArgs, first: Path | RemoteRaster) -> Grid:
    """The output grid, from the arguments and the first item's first asset.

    Raises:
        JobFailed: `crs.unknown` (field `crs`), `resolution.required` (a CRS unlike the asset's, no resolution),
            `area.empty` (field `bbox`), and what opening the asset raises.
    """
    with open_raster(first, "assets") as src:
        own_crs, own_res, dtype, nodata = src.crs, src.res[0], src.dtypes[0], src.nodata
    crs = _crs(args.crs) if args.crs else own_crs
    if own_crs is None or crs is None:
        raise JobFailed("crs.missing", "assets: the first asset has no CRS; give `crs`", field="crs")
    if args.resolution is None and crs != own_crs:
        message = f"resolution: required when crs ({args.crs}) is not the assets' ({own_crs.to_string()})"
        raise JobFailed("resolution.required", message, field="resolution")
    res = args.resolution or own_res
    left, bottom, right, top = transform_bounds(WGS84, crs, *_area(args), densify_pts=21)
    left, bottom = math.floor(left / res) * res, math.floor(bottom / res) * res
    right, top = math.ceil(right / res) * res, math.ceil(top / res) * res
    width, height = round((right - left) / res), round((top - bottom) / res)
    if width < 1 or height < 1:
        raise JobFailed("area.empty", "bbox: the area is less than a pixel on the grid", field="bbox")
    return Grid(crs.to_wkt(), Affine(res, 0, left, 0, -res, top), width, height, dtype, nodata)


def _crs(text: str) -> CRS:
    try:
        return CRS.from_user_input(text)
    except CRSError as exc:
        raise JobFailed("crs.unknown", f"crs: {text!r} is not a CRS GDAL knows", field="crs") from exc


def _area(args: StacCompositeArgs) -> tuple[float, float, float, float]:
    """The area in degrees: `bbox`, else the search's bbox, else its geometry's bounds."""
    if args.bbox is not None:
        return tuple(args.bbox)  # type: ignore[return-value]
    if args.search.bbox is not None:
        return tuple(args.search.bbox)  # type: ignore[return-value]
    return tuple(shapely.geometry.shape(args.search.intersects).bounds)  # type: ignore[return-value]
