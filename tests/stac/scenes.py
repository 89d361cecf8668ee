"""A Sentinel-2-like fixture: 2 dates × 3 overlapping tiles in UTM 33N, bands B02 B03 B04 B08 (uint16 reflectance ×
10,000) and SCL (the scene classification, with cloud classes), each a COG written by rio-cogeo, and their STAC
items (eo:cloud_cover counted from SCL, footprints in degrees) with asset hrefs under a base URL.
"""

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from affine import Affine
from pyproj import Transformer
from rasterio.io import MemoryFile
from rio_cogeo.cogeo import cog_translate
from rio_cogeo.profiles import cog_profiles

COLLECTION = "sentinel-2-like"
BANDS = ("B02", "B03", "B04", "B08")
CLOUD_CLASSES = (8, 9, 10)
"""SCL classes counted as cloud: medium and high probability, thin cirrus (3 is cloud shadow, 4 vegetation, 5 bare
soil, 6 water)."""
DATES = ("2024-06-05T10:20:31Z", "2024-06-15T10:20:29Z")
SIZE, PIXEL = 256, 40.0
"""Pixels on a side and their size in metres: a tile is 10.24 km wide."""
ORIGINS = ((600_000.0, 5_160_000.0), (608_000.0, 5_160_000.0), (604_000.0, 5_154_000.0))
"""Upper-left corners of the three tiles: each overlaps the others by a quarter or more."""
CLOUD_RADII = ((20, 120, 60), (150, 0, 90))
"""Radius in pixels of the cloud of each tile on each date: from clear to mostly cloudy."""
CRS = "EPSG:32633"


@dataclass(frozen=True)
class Layout:
    """The scenes' size: pixels on a side, their size in metres, the COGs' block side and overview levels. The tiles'
    origins and clouds scale with the tile's width in metres, so every layout has the same three overlaps; the
    default is the tests' (`SIZE`, `PIXEL`, `ORIGINS`, `CLOUD_RADII`)."""

    size: int = SIZE
    pixel: float = PIXEL
    block: int = 128
    overviews: int = 1
    origins: tuple[tuple[float, float], ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "origins", tuple(self.scaled(x, y) for x, y in ORIGINS))

    def scaled(self, x: float, y: float) -> tuple[float, float]:
        """A point of the tests' layout (metres in `CRS`) at the same place relative to this layout's tiles."""
        scale = self.size * self.pixel / (SIZE * PIXEL)
        left, top = ORIGINS[0]
        return left + (x - left) * scale, top + (y - top) * scale

    def radius(self, date: int, tile: int) -> int:
        """The cloud's radius in pixels of `tile` on the `date`th date."""
        return CLOUD_RADII[date][tile] * self.size // SIZE


@dataclass(frozen=True)
class Scene:
    """One item: where its files are and its STAC item (hrefs under the base URL the fixture was written for)."""

    id: str
    folder: Path
    cloud_cover: float
    footprint: shapely.Polygon
    item: dict[str, Any]


def write_scenes(root: Path, base_url: str, layout: Layout = Layout()) -> list[Scene]:
    """Write the six scenes' COGs under `root` (`<id>/<band>.tif`) and return them with their items."""
    return [
        _scene(root, base_url, date, tile, layout, layout.radius(d, tile))
        for d, date in enumerate(DATES)
        for tile in range(len(ORIGINS))
    ]


def collection(scenes: list[Scene] | None = None, name: str = COLLECTION) -> dict[str, Any]:
    """The collection `name` the scenes belong to, its extent covering them (the tests' scenes when not given)."""
    bbox = [round(v, 6) for v in shapely.union_all([s.footprint for s in scenes]).bounds] if scenes else None
    return {
        "type": "Collection",
        "stac_version": "1.0.0",
        "id": name,
        "description": "Sentinel-2-like scenes for Geogate's tests",
        "license": "CC0-1.0",
        "links": [],
        "extent": {
            "spatial": {"bbox": [bbox or [16.2, 46.4, 16.6, 46.6]]},
            "temporal": {"interval": [[DATES[0], DATES[-1]]]},
        },
    }


def _scene(root: Path, base_url: str, date: str, tile: int, layout: Layout, radius: int) -> Scene:
    scene_id = f"S2L_T33TWM{tile}_{date[:10].replace('-', '')}"
    folder = root / scene_id
    folder.mkdir(parents=True, exist_ok=True)
    origin = layout.origins[tile]
    transform = Affine(layout.pixel, 0, origin[0], 0, -layout.pixel, origin[1])
    rng = np.random.default_rng(zlib.crc32(scene_id.encode()))
    scl = _classification(rng, radius, layout.size)
    for band in BANDS:
        _cog(folder / f"{band}.tif", _reflectance(rng, band, scl), transform, layout)
    _cog(folder / "SCL.tif", scl, transform, layout)
    cloud = round(float(np.isin(scl, CLOUD_CLASSES).mean() * 100), 3)
    outline = _footprint(transform, layout.size)
    return Scene(scene_id, folder, cloud, outline, _item(scene_id, date, cloud, outline, f"{base_url}/{scene_id}"))


def _classification(rng: np.random.Generator, radius: int, size: int) -> np.ndarray:
    rows, cols = np.mgrid[0:size, 0:size]
    scl = np.where(cols < size // 3, 6, np.where(rng.random((size, size)) < 0.7, 4, 5)).astype("uint8")
    centre = rng.integers(size // 4, 3 * size // 4, 2)
    distance = np.hypot(rows - centre[0], cols - centre[1])
    scl[(distance < radius + 12 * size // SIZE) & (distance >= radius)] = 3
    scl[distance < radius] = 9
    scl[(distance < radius) & (distance > radius * 0.7)] = 8
    return scl


def _reflectance(rng: np.random.Generator, band: str, scl: np.ndarray) -> np.ndarray:
    base = {"B02": 600, "B03": 800, "B04": 700, "B08": 3000}[band]
    values = base + rng.normal(0, 80, scl.shape)
    values[scl == 6] = base / 3
    values[np.isin(scl, CLOUD_CLASSES)] = 8000
    return np.clip(values, 1, 10_000).astype("uint16")


def _cog(path: Path, data: np.ndarray, transform: Affine, layout: Layout) -> None:
    size = layout.size
    profile = {"driver": "GTiff", "width": size, "height": size, "count": 1, "dtype": data.dtype.name}
    with MemoryFile() as memory:
        with memory.open(**profile, crs=CRS, transform=transform, nodata=0) as dst:
            dst.write(data, 1)
        with memory.open() as src:
            output = cog_profiles.get("deflate") | {"blockxsize": layout.block, "blockysize": layout.block}
            cog_translate(src, str(path), output, overview_level=layout.overviews, quiet=True, in_memory=True)


def _footprint(transform: Affine, size: int) -> shapely.Polygon:
    to_degrees = Transformer.from_crs(CRS, "EPSG:4326", always_xy=True)
    corners = [transform * (c, r) for c, r in ((0, 0), (size, 0), (size, size), (0, size))]
    return shapely.Polygon([to_degrees.transform(x, y) for x, y in corners])


def _item(scene_id: str, date: str, cloud: float, outline: shapely.Polygon, base: str) -> dict[str, Any]:
    cog = "image/tiff; application=geotiff; profile=cloud-optimized"
    assets = {band: {"href": f"{base}/{band}.tif", "type": cog, "roles": ["data", "reflectance"]} for band in BANDS}
    assets["SCL"] = {"href": f"{base}/SCL.tif", "type": cog, "roles": ["data", "classification"]}
    return {
        "type": "Feature",
        "stac_version": "1.0.0",
        "stac_extensions": ["https://stac-extensions.github.io/eo/v1.1.0/schema.json"],
        "id": scene_id,
        "collection": COLLECTION,
        "geometry": shapely.geometry.mapping(outline),
        "bbox": list(outline.bounds),
        "properties": {"datetime": date, "eo:cloud_cover": cloud, "platform": "sentinel-2-like", "proj:epsg": 32633},
        "links": [],
        "assets": assets,
    }
