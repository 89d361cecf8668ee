"""The GDAL work of the tools (rasterio, pyogrio, pyproj, shapely); their jobs are bound in `workers/tools/`.

GDAL is hardened here, before any job module loads: no Python in VRT pixel functions, GML xlinks and remote
schemas not fetched, and only the drivers of `workers.gdal.drivers` registered in rasterio's GDAL and in
pyogrio's (VRT sources and every file an open dataset names are checked by `workers.jobkit.confine`). SQLite's
page cache is sized for GeoPackages.
"""

from workers.gdal.drivers import harden_environment, restrict, size_caches

harden_environment()
size_caches()
restrict()
