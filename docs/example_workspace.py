"""The workspace the tool reference's example calls run in: every file the examples name, small and synthetic.

A 120×90 DEM at 10 m in UTM 33N (`dem.tif`, from `docs/preview_dem.py`), a land-cover raster on the same grid,
two tiles side by side, a red and a near-infrared band (`s2_b4.tif`, `s2_b8.tif`), and vector layers over the same
extent: districts, lakes and an area of interest (polygons), roads and a coast (lines, the roads also as a Shapefile
in geographic coordinates), wells (points).
"""

from pathlib import Path

import numpy as np
import rasterio
from pyogrio import write_dataframe
from rasterio.transform import from_origin
from shapely.geometry import LineString, Point, box

from docs.preview_dem import synthetic_dem

CRS = "EPSG:32633"
WEST, NORTH, PIXEL, WIDTH, HEIGHT = 600000.0, 5340000.0, 10.0, 120, 90
EAST, SOUTH = WEST + WIDTH * PIXEL, NORTH - HEIGHT * PIXEL


def _raster(path: Path, data: np.ndarray, west: float, nodata: float | None) -> None:
    profile = {"driver": "GTiff", "width": data.shape[1], "height": data.shape[0], "count": 1, "dtype": data.dtype}
    grid = {"crs": CRS, "transform": from_origin(west, NORTH, PIXEL, PIXEL), "nodata": nodata}
    with rasterio.open(path, "w", **profile, **grid, tiled=True, blockxsize=128, blockysize=128) as out:
        out.write(data, 1)


def _layer(path: Path, rows: list[dict[str, object]], crs: str = CRS, **options: object) -> None:
    import geopandas

    frame = geopandas.GeoDataFrame(rows, geometry="geometry", crs=crs)
    write_dataframe(frame, path, **options)


def build(root: Path) -> None:
    """Write every file the examples name into `root`."""
    dem = (synthetic_dem(HEIGHT, WIDTH) - 6000).astype("float32")
    _raster(root / "dem.tif", dem, WEST, -9999.0)
    classes = np.digitize(dem, np.quantile(dem, [0.25, 0.5, 0.75])).astype("uint8") + 1
    _raster(root / "landcover.tif", classes, WEST, 0)
    red = (dem / dem.max() * 0.3).astype("float32")
    _raster(root / "s2_b4.tif", red, WEST, None)
    _raster(root / "s2_b8.tif", (0.6 - red).astype("float32"), WEST, None)
    half = WIDTH // 2
    _raster(root / "tile_a.tif", dem[:, :half].copy(), WEST, -9999.0)
    _raster(root / "tile_b.tif", dem[:, half:].copy(), WEST + half * PIXEL, -9999.0)
    middle = (WEST + EAST) / 2
    _layer(
        root / "districts.gpkg",
        [
            {"name": "west", "geometry": box(WEST, SOUTH, middle, NORTH)},
            {"name": "east", "geometry": box(middle, SOUTH, EAST, NORTH)},
        ],
    )
    _layer(root / "lakes.gpkg", [{"name": "tarn", "geometry": Point(WEST + 300, NORTH - 300).buffer(120)}])
    _layer(root / "aoi.gpkg", [{"name": "aoi", "geometry": box(WEST + 200, SOUTH + 200, EAST - 300, NORTH - 250)}])
    road = LineString([(WEST + 50, SOUTH + 50), (middle, NORTH - 100), (EAST - 50, NORTH - 400)])
    _layer(root / "roads.gpkg", [{"ref": "B17", "geometry": road}])
    geographic = [{"ref": "B17", "geometry": LineString([(15.95, 48.18), (16.0, 48.2), (16.05, 48.19)])}]
    _layer(root / "roads.shp", geographic, crs="EPSG:4326")
    wells = [{"id": n, "geometry": Point(WEST + 150 + 300 * n, SOUTH + 200 + 150 * n)} for n in range(3)]
    _layer(root / "wells.gpkg", wells)
    coast = LineString([(WEST + 10 * n, SOUTH + 400 + 60 * np.sin(n / 7)) for n in range(120)])
    _layer(root / "coast.gpkg", [{"name": "shore", "geometry": coast}])
