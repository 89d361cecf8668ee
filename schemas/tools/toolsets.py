"""Toolsets: the groups `tools/list` publishes or leaves out (`GEOGATE_TOOLSETS`).

A tool belongs to the toolset its `ToolSpec.toolset` names, else to its concept module's (`CONCEPTS`); the gateway's
own tools (preflight's) are placed in `GATEWAY_TOOLS`. A tool of a toolset the server does not publish is neither
listed nor callable.
"""

from collections.abc import Iterable

TOOLSETS: dict[str, str] = {
    "raster": "Read, convert, reproject, measure and transform rasters: info, statistics, band math, terrain, clip, "
    "mosaic.",
    "vector": "Read, convert, reproject, clip, buffer, simplify and measure vector layers; derive geometries; "
    "overlay, dissolve and join layers; filter and calculate fields; query layers with SQL.",
    "analysis": "Between rasters and vectors: zonal statistics, polygonize, rasterize, contours.",
    "previews": "Look at data: quicklooks of rasters and vectors, COG validation.",
    "maps": "`map_image`: several raster and vector layers drawn into one PNG map with legend and scale bar.",
    "preflight": "Store the justifications a gated call asks for (`persist_justification(s)`).",
    "llm": "`ask`: a question to the server's model, which may call the read-only tools.",
    "workflows": "Guided workflows and chain-of-thought steps (`start_workflow`, `startChainOfThought`, …).",
    "core": "`ping`: a round trip through a queue and a worker, to check the server works.",
    "admin": "Operators' tools: `revoke_justification`.",
    "provenance": "Where a file comes from, from the log (`provenance`, W3C PROV-JSON) and its calls made again "
    "(`rerun`).",
    "stac": "Search STAC catalogs (`GEOGATE_STAC_CATALOGS`) for imagery (items, footprints, asset hrefs) and "
    "composite what they find per pixel across time into a COG.",
    "plans": "`plan_run`: several tool calls, validated whole, run as one durable call (steps refer to results).",
}
"""Every toolset and what it holds, in the order the docs list them."""

CONCEPTS: dict[str, str] = {
    "core": "core",
    "raster": "raster",
    "raster_ops": "raster",
    "vector": "vector",
    "analysis": "analysis",
    "previews": "previews",
    "maps": "maps",
    "llm": "llm",
    "workflows": "workflows",
    "provenance": "provenance",
    "stac": "stac",
    "plans": "plans",
}
"""The toolset of each concept module of `schemas.tools` (its last name part) whose specs declare none."""

GATEWAY_TOOLS: dict[str, str] = {
    "persist_justification": "preflight",
    "persist_justifications": "preflight",
    "revoke_justification": "admin",
}
"""The toolset of each tool the gateway serves itself."""

EXTRA = "extra"
"""The toolset of the tools `GEOGATE_EXTRA_TOOLS` adds; published whenever that setting names them."""

ALL = "all"
"""The `GEOGATE_TOOLSETS` value that publishes every toolset."""


def published(names: Iterable[str]) -> frozenset[str]:
    """The toolsets a `GEOGATE_TOOLSETS` value publishes (`all`: every one), the extra tools' always.

    Raises:
        ValueError: a name is not a toolset; the message names the setting and the known ones.
    """
    chosen = set(names)
    unknown = sorted(chosen - set(TOOLSETS) - {ALL})
    if unknown:
        raise ValueError(f"GEOGATE_TOOLSETS: unknown toolset(s) {', '.join(unknown)}; known: {', '.join(TOOLSETS)}")
    return frozenset(TOOLSETS if ALL in chosen else chosen) | {EXTRA}


def unpublished_message(name: str, toolset: str, names: Iterable[str]) -> str:
    """Why a call of a tool left out is refused: its toolset, and the setting that publishes it."""
    now = ",".join(names)
    return (
        f"tool {name!r} is in the {toolset!r} toolset, which this server does not publish; "
        f"add it to GEOGATE_TOOLSETS (now {now!r}) or set GEOGATE_TOOLSETS=all"
    )


def concept_toolset(module: str) -> str:
    """The toolset of a concept module (`schemas.tools.raster_ops` → `raster`); a new concept names its own.

    Raises:
        ValueError: the module is not in `CONCEPTS` (its specs must then name their toolset).
    """
    concept = module.removeprefix("schemas.tools.").split(".")[0]
    if concept not in CONCEPTS:
        raise ValueError(
            f"concept {concept!r} has no toolset: name one on its specs (toolset=…) or add it to "
            "schemas.tools.toolsets.CONCEPTS"
        )
    return CONCEPTS[concept]
