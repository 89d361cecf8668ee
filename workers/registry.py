"""The job families a worker loads. Importing a family registers its jobs with `workers.jobs.job`; this module is
the only one that knows them all, and no family imports it."""

import importlib

from workers.jobs import JOBS, Job

FAMILIES = (
    "workers.ping",
    "workers.gdal.catalog",
    "workers.gdal.convert",
    "workers.gdal.convert_tiles",
    "workers.gdal.info",
    "workers.gdal.reproject",
    "workers.gdal.reproject_tiles",
    "workers.gdal.stats",
    "workers.gdal.stats_tiles",
    "workers.gdal.vector_ops",
    "workers.llm.job",
    "workers.llm.justify",
    "workers.sandbox.job",
    "workers.workflows.jobs",
    "workers.tiling.fan_in",
    "workers.tiling.fan_out",
    "workers.tiling.progress",
    "workers.gdal.zonal",
    "workers.gdal.preview",
    "workers.gdal.cog",
    "workers.gdal.shapes",
    "workers.gdal.rasterize",
    "workers.gdal.polygonize_tiles",
    "workers.gdal.contours_tiles",
    "workers.gdal.calc",
    "workers.gdal.terrain",
    "workers.gdal.clip",
    "workers.gdal.mosaic",
)


def load_all() -> dict[str, Job]:
    """Import every job family and return the registry."""
    for family in FAMILIES:
        importlib.import_module(family)
    return JOBS
