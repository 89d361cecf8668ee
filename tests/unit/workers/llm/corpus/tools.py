"""The tools the labelled samples call: geospatial, with every JSON type a value can need (and keys that need
escaping in attribute syntax: `tag_feature`)."""

from typing import Any


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"name": name, "description": f"{name} (sample tool)", "inputSchema": schema}


TOOLS: list[dict[str, Any]] = [
    _tool("raster_info", {"uri": {"type": "string"}, "band": {"type": "integer", "minimum": 1}}, ["uri"]),
    _tool(
        "raster_reproject",
        {
            "uri": {"type": "string"},
            "dst_crs": {"type": "string", "pattern": "^EPSG:[0-9]+$"},
            "resampling": {"$ref": "#/$defs/Resampling"},
            "options": {"type": "object", "properties": {"tiled": {"type": "boolean"}}},
        },
        ["uri", "dst_crs"],
    ),
    _tool(
        "raster_stats",
        {
            "uri": {"type": "string"},
            "bands": {"type": "array", "items": {"type": "integer"}},
            "approx": {"type": "boolean"},
            "percentiles": {"type": "array", "items": {"type": "number"}},
        },
        ["uri"],
    ),
    _tool(
        "vector_buffer",
        {
            "uri": {"type": "string"},
            "layer": {"type": "string"},
            "distance": {"type": "number"},
            "segments": {"type": "integer"},
        },
        ["uri", "distance"],
    ),
    _tool(
        "search_catalog",
        {
            "query": {"type": "string"},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "bbox": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
            "collection": {"type": ["string", "null"]},
        },
        ["query"],
    ),
    _tool("write_file", {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
    _tool("workspace_summary", {}, []),
    _tool(
        "tag_feature",
        {"uri": {"type": "string"}, "q&a": {"type": "string"}, "a<b": {"type": "boolean"}},
        ["uri"],
    ),
]
TOOLS[1]["inputSchema"]["$defs"] = {"Resampling": {"type": "string", "enum": ["nearest", "bilinear", "cubic"]}}
"""`resampling` is a `$ref`, as pydantic writes enums: coercion must follow it."""
