"""The tool registry both sides read: every `ToolSpec` by name. A family adds its specs to `_FAMILIES`."""

from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.catalog import CATALOG_SPECS
from schemas.tools.conformance import CONFORMANCE_SPECS
from schemas.tools.core import PING
from schemas.tools.handlers import RUN_RESULT_HANDLER
from schemas.tools.info import RASTER_INFO, VECTOR_INFO
from schemas.tools.justify import JUSTIFY_CHOICE
from schemas.tools.llm import ASK
from schemas.tools.raster import RASTER_CONVERT, RASTER_REPROJECT, RASTER_STATS
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
)

TOOLS: dict[str, ToolSpec] = {spec.name: spec for family in _FAMILIES for spec in family}
"""Tools published to MCP clients (`tools/list`)."""

_INTERNAL: tuple[tuple[ToolSpec, ...], ...] = (
    CATALOG_SPECS,
    tuple(tile_spec(spec) for spec in TOOLS.values() if spec.tiled),
    (FAN_IN,),
    (RUN_RESULT_HANDLER,),
    (JUSTIFY_CHOICE,),
    CONFORMANCE_SPECS,
)

INTERNAL: dict[str, ToolSpec] = {spec.name: spec for family in _INTERNAL for spec in family}
"""Jobs the gateway runs for itself (resource reads, handler runs): same path and events, not in `tools/list`."""

SPECS: dict[str, ToolSpec] = {**TOOLS, **INTERNAL}
"""Everything a worker may be asked to run."""

__all__ = ["INTERNAL", "SPECS", "TOOLS", "Hints", "ToolArgs", "ToolResult", "ToolSpec"]
