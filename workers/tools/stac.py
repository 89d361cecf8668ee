"""The jobs of `stac_search`, `stac_composite` and `stac_zonal_series` (`schemas/tools/stac.py`); their work
lives in `workers.stac`."""

from geogate.settings import Settings
from schemas.tools.stac import (
    STAC_COMPOSITE,
    STAC_SEARCH,
    STAC_ZONAL_SERIES,
    StacCompositeArgs,
    StacCompositeResult,
    StacSearchArgs,
    StacSearchResult,
    StacZonalSeriesArgs,
    StacZonalSeriesResult,
)
from workers.gdal.windowed import declare_tiles
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.stac import composite, series
from workers.stac.search import search

_DEFAULTS = Settings.defaults()


@job(STAC_SEARCH)
def stac_search(args: StacSearchArgs, ctx: JobContext) -> StacSearchResult:
    """Search the catalog with the server's allow-list, cap and retry policy."""
    return search(args, ctx.settings or _DEFAULTS)


@job(STAC_COMPOSITE)
def stac_composite(args: StacCompositeArgs, ctx: JobContext) -> StacCompositeResult:
    """Composite the search's items over the area into a COG."""
    return composite.stac_composite(args, ctx)


@job(STAC_ZONAL_SERIES)
def stac_zonal_series(args: StacZonalSeriesArgs, ctx: JobContext) -> StacZonalSeriesResult:
    """Statistics of one asset per zone and per date of the search's items."""
    return series.zonal_series(args, ctx)


declare_tiles(
    STAC_COMPOSITE,
    composite.composite_of,
    composite.composite_from_plan,
    composite.composited,
    "bbox",
    composite.COG,
)
