"""The job of `stac_search` (`schemas/tools/stac.py`); the search lives in `workers.stac.search`."""

from geogate.settings import Settings
from schemas.tools.stac import STAC_SEARCH, StacSearchArgs, StacSearchResult
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.stac.search import search

_DEFAULTS = Settings.defaults()


@job(STAC_SEARCH)
def stac_search(args: StacSearchArgs, ctx: JobContext) -> StacSearchResult:
    """Search the catalog with the server's allow-list, cap and retry policy."""
    return search(args, ctx.settings or _DEFAULTS)
