"""The tool registry both sides read: every `ToolSpec` by name. A family adds its specs to `_FAMILIES`."""

from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.core import PING
from schemas.tools.info import RASTER_INFO, VECTOR_INFO

_FAMILIES: tuple[tuple[ToolSpec, ...], ...] = (
    (PING,),
    (RASTER_INFO, VECTOR_INFO),
)

TOOLS: dict[str, ToolSpec] = {spec.name: spec for family in _FAMILIES for spec in family}

__all__ = ["TOOLS", "Hints", "ToolArgs", "ToolResult", "ToolSpec"]
