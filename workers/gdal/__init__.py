"""GDAL jobs (rasterio, pyogrio, pyproj, shapely): one module per tool; importing a module registers its job."""
