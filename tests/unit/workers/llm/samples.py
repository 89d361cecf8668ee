"""Sample MCP tool definitions shared by the LLM host tests."""

from typing import Any

RASTER_INFO: dict[str, Any] = {
    "name": "raster_info",
    "description": "Read a raster's metadata.",
    "inputSchema": {
        "type": "object",
        "properties": {"uri": {"type": "string"}, "band": {"type": "integer", "minimum": 1}},
        "required": ["uri"],
        "additionalProperties": False,
    },
    "_meta": {"aliases": {"path": "uri", "file": "uri"}},
}
REPROJECT: dict[str, Any] = {
    "name": "raster_reproject",
    "description": "Warp a raster into another CRS.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "uri": {"type": "string", "x-aliases": ["file", "src"]},
            "dst_crs": {"type": "string", "pattern": "^EPSG:[0-9]+$"},
            "resampling": {"enum": ["nearest", "bilinear", "cubic"]},
            "options": {"type": "object", "properties": {"tiled": {"type": "boolean"}}},
        },
        "required": ["uri", "dst_crs"],
        "additionalProperties": False,
    },
}
DELETE: dict[str, Any] = {
    "name": "workspace_delete",
    "description": "Delete a file.",
    "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
}
TOOLS = [RASTER_INFO, REPROJECT, DELETE]
