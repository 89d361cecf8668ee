"""The GDAL drivers jobs may use, and their enforcement in rasterio's and pyogrio's GDAL (each wheel bundles its own).

The lists are the one definition: every other driver is unregistered from both libraries when `restrict` runs
(the complement of the lists, computed from what each library registered, whatever its GDAL version, goes into
its `GDAL_SKIP`, which GDAL applies at every `GDALAllRegister`), and raster inputs are also opened with
`RASTER_INPUTS` as the only drivers GDAL may try. Formats that name other files GDAL would read without showing
them (MRF data files, PDS labels, GDALG pipelines, HDF5 external storage, tile indexes, network drivers) are left
out; VRTs stay, their sources checked by `workers.jobkit.confine`. GDAL's Parquet driver is left out too (it opens
a folder of files, or a `_metadata` file whose row groups name others): GeoParquet is read and written through
pyarrow (`workers.gdal.geoparquet`), one checked file at a time.
"""

import os

RASTER_INPUTS: tuple[str, ...] = ("GTiff", "JP2OpenJPEG", "PNG", "JPEG", "VRT")
"""Drivers a raster input may be read with (a COG is read by GTiff; PNG and JPEG take world files)."""
RASTER_OUTPUTS: tuple[str, ...] = ("GTiff", "COG", "PNG", "JPEG")
"""Drivers a raster output may be written with."""
VECTOR_INPUTS: tuple[str, ...] = (
    "GPKG", "ESRI Shapefile", "GeoJSON", "GeoJSONSeq", "FlatGeobuf", "CSV", "KML", "LIBKML", "GML", "OGR_VRT",
)  # fmt: skip
"""Drivers a vector input may be read with."""
VECTOR_OUTPUTS: tuple[str, ...] = (
    "GPKG", "ESRI Shapefile", "GeoJSON", "GeoJSONSeq", "FlatGeobuf", "CSV", "KML", "GML",
)  # fmt: skip
"""Drivers a vector output may be written with."""
INTERNAL: tuple[str, ...] = ("MEM", "Memory")
"""Kept registered in rasterio's GDAL for its in-memory rasters and its polygonize layer; never opened by name."""

RASTER_DRIVERS = frozenset(RASTER_INPUTS + RASTER_OUTPUTS + INTERNAL)
"""Everything rasterio's GDAL keeps registered."""
VECTOR_DRIVERS = frozenset(VECTOR_INPUTS + VECTOR_OUTPUTS)
"""Everything pyogrio's GDAL keeps registered among its vector drivers."""


def harden_environment() -> None:
    """GDAL options set before either GDAL loads: no Python in VRT pixel functions, GML xlinks and remote GML
    schemas not fetched."""
    os.environ.setdefault("GDAL_VRT_ENABLE_PYTHON", "NO")
    os.environ.setdefault("GML_SKIP_RESOLVE_ELEMS", "ALL")
    os.environ.setdefault("GML_DOWNLOAD_SCHEMA", "NO")


SQLITE_CACHE_MB = 128
"""SQLite's page cache for GeoPackage reads and writes (GDAL's `OGR_SQLITE_CACHE`; SQLite's own is 2 MB), allocated
as a file needs it. Writing 981,933 joined points, R-tree included, to a GeoPackage with pyogrio took 3.1–3.7 s of
CPU with it against 4.2–5.3 s without (paired runs in one session)."""


SQLITE_UNGUARDED = {"OGR_SQLITE_JOURNAL": "OFF", "OGR_SQLITE_SYNCHRONOUS": "OFF"}
"""No rollback journal and no sync in SQLite's writes: a job writes a GeoPackage only as a new temporary file renamed
into place when whole (`workers.jobkit.files.atomic_output`), and discards it on any failure, so what they guard is
thrown away. Writing the 981,933 joined points took 3.8 s without them, 4.4 s with (one process, same run)."""


def size_caches() -> None:
    """GDAL's caches sized for the jobs, and SQLite's writes unguarded, before either GDAL loads (a setting already
    in the environment stays)."""
    os.environ.setdefault("OGR_SQLITE_CACHE", str(SQLITE_CACHE_MB))
    for name, value in SQLITE_UNGUARDED.items():
        os.environ.setdefault(name, value)


def _skip(registered: set[str], kept: frozenset[str]) -> str:
    # GDAL splits GDAL_SKIP on commas when it holds one (driver names have spaces: "MapInfo File")
    return ",".join(sorted(registered - kept))


def restrict() -> None:
    """Unregister every driver not on the lists from rasterio's GDAL and from pyogrio's.

    Raises:
        RuntimeError: a driver off the lists is still registered afterwards (the worker must not start so).
    """
    import pyogrio
    import pyogrio.core
    import rasterio
    import rasterio._env
    from rasterio.env import set_gdal_config

    with rasterio.Env() as env:
        registered = set(env.drivers())
    set_gdal_config("GDAL_SKIP", _skip(registered, RASTER_DRIVERS))
    rasterio._env._have_registered_drivers = False  # the next Env runs GDALAllRegister again, which applies it
    with rasterio.Env() as env:
        left = set(env.drivers()) - RASTER_DRIVERS

    pyogrio.set_gdal_config_options({"GDAL_SKIP": _skip(set(pyogrio.list_drivers()), VECTOR_DRIVERS)})
    pyogrio.core._register_drivers()  # GDALAllRegister in pyogrio's GDAL, which applies it
    left |= set(pyogrio.list_drivers()) - VECTOR_DRIVERS
    if left:
        raise RuntimeError(f"GDAL drivers off the allow-list are still registered: {sorted(left)}")
