"""The tool registry both sides read: every `ToolSpec` by name. A family adds its specs to `_FAMILIES`."""

from schemas.tools.analysis import ANALYSIS_TOOLS
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.catalog import CATALOG_SPECS
from schemas.tools.core import PING
from schemas.tools.handlers import RUN_RESULT_HANDLER
from schemas.tools.info import RASTER_INFO, VECTOR_INFO
from schemas.tools.justify import JUSTIFY_CHOICE
from schemas.tools.llm import ASK
from schemas.tools.mosaic import RASTER_CLIP, RASTER_MOSAIC
from schemas.tools.previews import PREVIEW_TOOLS
from schemas.tools.raster import RASTER_CONVERT, RASTER_REPROJECT, RASTER_STATS
from schemas.tools.raster_ops import RASTER_CALC, RASTER_TERRAIN
from schemas.tools.tiling import FAN_IN, tile_spec
from schemas.tools.vector import VECTOR_BUFFER, VECTOR_CLIP, VECTOR_CONVERT, VECTOR_REPROJECT, VECTOR_SIMPLIFY
from schemas.tools.workflows import WORKFLOW_TOOLS

_FAMILIES: tuple[tuple[ToolSpec, ...], ...] = (
    (PING,),
    (RASTER_INFO, VECTOR_INFO),
    (RASTER_CONVERT, RASTER_REPROJECT, RASTER_STATS),
    (VECTOR_CONVERT, VECTOR_REPROJECT, VECTOR_CLIP, VECTOR_BUFFER, VECTOR_SIMPLIFY),
    tuple(WORKFLOW_TOOLS),
    (ASK,),
    ANALYSIS_TOOLS,
    PREVIEW_TOOLS,
    (RASTER_CALC, RASTER_TERRAIN, RASTER_CLIP, RASTER_MOSAIC),
)

TOOLS: dict[str, ToolSpec] = {spec.name: spec for family in _FAMILIES for spec in family}
"""Tools published to MCP clients (`tools/list`)."""

_INTERNAL: tuple[tuple[ToolSpec, ...], ...] = (
    CATALOG_SPECS,
    tuple(tile_spec(spec) for spec in TOOLS.values() if spec.tiled),
    (FAN_IN,),
    (RUN_RESULT_HANDLER,),
    (JUSTIFY_CHOICE,),
)

INTERNAL: dict[str, ToolSpec] = {spec.name: spec for family in _INTERNAL for spec in family}
"""Jobs the gateway runs for itself (resource reads, handler runs): same path and events, not in `tools/list`."""

SPECS: dict[str, ToolSpec] = {**TOOLS, **INTERNAL}
"""Everything a worker may be asked to run; with the extra tools of `GEOGATE_EXTRA_TOOLS` once they are loaded."""

EXTRA: dict[str, ToolSpec] = {}
"""Tools a module named by `GEOGATE_EXTRA_TOOLS` adds (`schemas.tools.extra`): published and run like `TOOLS`."""


def add_extra(specs: tuple[ToolSpec, ...]) -> None:
    """Register extra tools: the gateway publishes them and a worker runs them (`schemas.tools.extra.load`).

    Raises:
        ValueError: an extra tool takes the name of one of Geogate's own.
    """
    for spec in specs:
        if spec.name in TOOLS or spec.name in INTERNAL:
            raise ValueError(f"extra tool {spec.name!r} takes the name of one of Geogate's own tools")
        EXTRA[spec.name] = SPECS[spec.name] = spec


__all__ = ["EXTRA", "INTERNAL", "SPECS", "TOOLS", "Hints", "ToolArgs", "ToolResult", "ToolSpec", "add_extra"]
