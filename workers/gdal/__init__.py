"""GDAL jobs (rasterio, pyogrio, pyproj, shapely): one module per tool; importing a module registers its job.

GDAL's configuration is hardened here, before any GDAL library is imported: no Python in VRT pixel functions, no
drivers that fetch other resources over the network or index arbitrary files (VRT sources are checked by
`workers.confine`), and GML xlinks are not resolved.
"""

import logging
import os

SKIPPED_DRIVERS = (
    "WMS WMTS WCS DAAS EEDA EEDAI PLMOSAIC OGCAPI STACTA STACIT GTI HTTP "
    "WFS OAPIF CSW NGW Carto AmigoCloud PLScenes Elasticsearch"
)

os.environ.setdefault("GDAL_VRT_ENABLE_PYTHON", "NO")
os.environ.setdefault("GDAL_SKIP", SKIPPED_DRIVERS)
os.environ.setdefault("GML_SKIP_RESOLVE_ELEMS", "ALL")


class _KnownSkips(logging.Filter):
    """rasterio's GDAL lacks the vector drivers in the list (pyogrio's has them): its notice about that is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "to unload from GDAL_SKIP" not in record.getMessage()


logging.getLogger("rasterio._env").addFilter(_KnownSkips())
