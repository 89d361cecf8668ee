"""The maps tools' jobs (`schemas/tools/maps.py`): a multi-layer map as one PNG."""

from schemas.tools.maps import MAP_IMAGE, MapImageArgs, MapImageResult
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.maps import compose


@job(MAP_IMAGE)
def map_image(args: MapImageArgs, ctx: JobContext) -> MapImageResult:
    """`args.layers` drawn in order into one PNG map with legend, scale bar, north arrow and title."""
    return compose.map_image(args, ctx)
