"""The catalog's internal jobs (`schemas/tools/catalog.py`): the workspace scan and a dataset's format, read by the
gateway's resources."""

from schemas.tools.catalog import (
    CATALOG_SCAN,
    DATASET_FORMAT,
    CatalogScanArgs,
    CatalogScanResult,
    DatasetFormatArgs,
    DatasetFormatResult,
)
from workers.gdal import catalog
from workers.jobkit.context import JobContext
from workers.jobs import job


@job(CATALOG_SCAN)
def catalog_scan(args: CatalogScanArgs, ctx: JobContext) -> CatalogScanResult:
    """List the datasets under the workspace roots (or one folder), optionally with driver and CRS."""
    return catalog.catalog_scan(args, ctx)


@job(DATASET_FORMAT)
def dataset_format(args: DatasetFormatArgs, ctx: JobContext) -> DatasetFormatResult:
    """Say whether `args.uri` is a raster or a vector dataset, its driver, CRS and shape."""
    return catalog.dataset_format(args, ctx)
