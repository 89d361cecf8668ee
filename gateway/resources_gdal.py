"""GDAL resources (gdal-mcp's set and more): workspace catalog, per-file metadata as jobs, reference documents."""

import base64
import functools
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import ImageContent

from gateway import reference
from schemas.tools.base import ToolSpec
from schemas.tools.catalog import CATALOG_SCAN, DATASET_FORMAT
from schemas.tools.previews import COG_VALIDATE, RASTER_PREVIEW
from schemas.tools.raster import RASTER_INFO, RASTER_STATS
from schemas.tools.vector import VECTOR_INFO

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

JSON = "application/json"
MARKDOWN = "text/markdown"
KINDS = ("all", "raster", "vector")
SUMMARY_LIMIT = 20_000


async def run_job(runtime: "Gateway", spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    """Run an internal or published job for a resource read and return its structured result.

    Raises:
        ResourceError: the job failed; the message is the job's (it names the field, e.g. `uri`).
    """
    result = await runtime.run(spec, args)
    content = result.structured_content or {}
    if result.is_error:
        error = content.get("error", {})
        raise ResourceError(str(error.get("message") or "the resource could not be read"))
    return content


def dumps(value: Any) -> str:
    """JSON text of a resource body."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _extensions(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [e if e.startswith(".") else f".{e}" for e in (p.strip().lower() for p in text.split(",")) if e]


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ResourceError(f"catalog kind {kind!r} is not one of {', '.join(KINDS)} (or by-crs, summary)")
    return kind


def _crs(epsg: str) -> str:
    return f"EPSG:{epsg}" if epsg.isdigit() else epsg


def summarise(scan: dict[str, Any]) -> dict[str, Any]:
    """Counts by kind, driver, CRS and suffix, total bytes and unreadable files, from a `catalog_scan` result."""
    entries = scan["entries"]
    return {
        "roots": scan["roots"],
        "total": len(entries),
        "truncated": scan["truncated"],
        "total_bytes": sum(e["size"] for e in entries),
        "by_kind": dict(Counter(e["kind"] for e in entries)),
        "by_driver": dict(Counter(e["driver"] or "unknown" for e in entries)),
        "by_crs": dict(Counter(e["crs"] or "none" for e in entries)),
        "by_extension": dict(Counter(e["path"].rsplit(".", 1)[-1].lower() for e in entries)),
        "unreadable": [e["relative"] for e in entries if e["error"]],
    }


def register_catalog(server: "MCPServer", runtime: "Gateway") -> None:
    """`catalog://workspace/…`: all/raster/vector (optionally under a folder), by CRS, and a summary."""

    async def scan(**args: Any) -> str:
        return dumps(await run_job(runtime, CATALOG_SCAN, {k: v for k, v in args.items() if v is not None}))

    async def summary(subpath: str = "", include_hidden: bool = False) -> str:
        whole = subpath in ("", ".", "all")
        args = {"subpath": "" if whole else subpath, "include_hidden": include_hidden, "limit": SUMMARY_LIMIT}
        return dumps(summarise(await run_job(runtime, CATALOG_SCAN, args)))

    for kind in KINDS:
        _static_catalog(server, kind, scan)

    @server.resource("catalog://workspace/summary", name="catalog_summary", mime_type=JSON)
    async def workspace_summary() -> str:
        """Workspace overview: dataset counts by kind, driver, CRS and suffix, total size, unreadable files."""
        return await summary()

    @server.resource(
        "catalog://workspace/summary/{+subpath}{?include_hidden}", name="catalog_summary_of", mime_type=JSON
    )
    async def folder_summary(subpath: str, include_hidden: bool = False) -> str:
        """Summary of one folder of the workspace ('all' or '.' for every root; gdal-mcp's summary/{_dummy})."""
        return await summary(subpath, include_hidden)

    @server.resource("catalog://workspace/by-crs/{epsg}{?kind,include_hidden}", name="catalog_by_crs", mime_type=JSON)
    async def by_crs(epsg: str, kind: str = "all", include_hidden: bool = False) -> str:
        """Datasets whose CRS is `epsg` (a number such as 4326, or any CRS text), compared as CRSs, not strings."""
        return await scan(kind=_kind(kind), crs=_crs(epsg), include_hidden=include_hidden)

    _catalog_templates(server, scan)


def _static_catalog(server: "MCPServer", kind: str, scan: Callable[..., Awaitable[str]]) -> None:
    async def listing() -> str:
        return await scan(kind=kind)

    what = "raster and vector datasets" if kind == "all" else f"{kind} datasets"
    description = f"Every {what} in the workspace roots, with relative path, size, driver and CRS."
    server.resource(f"catalog://workspace/{kind}", name=f"catalog_{kind}", description=description, mime_type=JSON)(
        listing
    )


def _catalog_templates(server: "MCPServer", scan: Callable[..., Awaitable[str]]) -> None:
    query = "{?limit,include_hidden,extensions}"

    @server.resource(f"catalog://workspace/{{kind}}{query}", name="catalog", mime_type=JSON)
    async def catalog(kind: str, limit: int = 1000, include_hidden: bool = False, extensions: str | None = None) -> str:
        """Datasets of `kind` (all, raster, vector) in the workspace; `extensions` is a comma-separated filter."""
        args = {"limit": limit, "include_hidden": include_hidden, "extensions": _extensions(extensions)}
        return await scan(kind=_kind(kind), **args)

    @server.resource(f"catalog://workspace/{{kind}}/{{+subpath}}{query}", name="catalog_folder", mime_type=JSON)
    async def catalog_folder(
        kind: str, subpath: str, limit: int = 1000, include_hidden: bool = False, extensions: str | None = None
    ) -> str:
        """Datasets of `kind` under one folder of the workspace ('.' for every root), as gdal-mcp's URIs."""
        args = {"limit": limit, "include_hidden": include_hidden, "extensions": _extensions(extensions)}
        return await scan(kind=_kind(kind), subpath=subpath, **args)


def register_metadata(server: "MCPServer", runtime: "Gateway") -> None:
    """`metadata://{file}/…`: format, raster, vector, bands, one band, statistics, COG check and preview of one
    workspace file."""

    async def job(spec: ToolSpec, **args: Any) -> dict[str, Any]:
        return await run_job(runtime, spec, {k: v for k, v in args.items() if v is not None})

    @server.resource("metadata://{+file}/format", name="metadata_format", mime_type=JSON)
    async def file_format(file: str) -> str:
        """Whether the file is a raster or a vector dataset, its GDAL driver, CRS, size, layers or shape."""
        return dumps(await job(DATASET_FORMAT, uri=file))

    @server.resource("metadata://{+file}/raster", name="metadata_raster", mime_type=JSON)
    async def raster(file: str) -> str:
        """Raster metadata (what `raster_info` returns): driver, size, bands, CRS, transform, bounds, nodata."""
        return dumps(await job(RASTER_INFO, uri=file))

    @server.resource("metadata://{+file}/vector{?layer}", name="metadata_vector", mime_type=JSON)
    async def vector(file: str, layer: str | None = None) -> str:
        """Vector metadata (what `vector_info` returns): layers, CRS, feature count, geometry type, fields."""
        return dumps(await job(VECTOR_INFO, uri=file, layer=layer))

    @server.resource("metadata://{+file}/statistics{?include_histogram}", name="metadata_statistics", mime_type=JSON)
    async def statistics(file: str, include_histogram: bool = False) -> str:
        """Per-band statistics (what `raster_stats` returns): min, max, mean, std, median, percentiles."""
        return dumps(await job(RASTER_STATS, uri=file, include_histogram=include_histogram))

    _band_resources(server, job)
    _analysis_resources(server, runtime, job)


def _analysis_resources(server: "MCPServer", runtime: "Gateway", job: Callable[..., Awaitable[dict[str, Any]]]) -> None:
    @server.resource("metadata://{+file}/cog", name="metadata_cog", mime_type=JSON)
    async def cog(file: str) -> str:
        """Whether the file is a valid Cloud-Optimised GeoTIFF (what `cog_validate` returns): errors, warnings,
        block size, overviews, compression."""
        return dumps(await job(COG_VALIDATE, uri=file))

    @server.resource("metadata://{+file}/preview{?mode,max_size}", name="metadata_preview", mime_type="image/png")
    async def preview(file: str, mode: str = "auto", max_size: int = 512) -> bytes:
        """A PNG quicklook of a raster (what `raster_preview` shows): mode auto, stretch, hillshade or rgb."""
        args = {"uri": file, "mode": mode, "max_size": max_size, "format": "png"}
        result = await runtime.run(RASTER_PREVIEW, args)
        images = [block for block in result.content if isinstance(block, ImageContent)]
        if result.is_error or not images:
            error = (result.structured_content or {}).get("error", {})
            raise ResourceError(str(error.get("message") or "the preview could not be made"))
        return base64.b64decode(images[0].data)


def _band_resources(server: "MCPServer", job: Callable[..., Awaitable[dict[str, Any]]]) -> None:
    async def bands(file: str, band: int | None, include_statistics: bool) -> str:
        info = await job(RASTER_INFO, uri=file, band=band)
        body: dict[str, Any] = {"path": info["path"], "count": info["count"], "bands": info["bands"]}
        if include_statistics:
            stats = await job(RASTER_STATS, uri=file, bands=[b["index"] for b in info["bands"]])
            by_band = {s["band"]: s for s in stats["band_stats"]}
            body["bands"] = [b | {"statistics": by_band.get(b["index"])} for b in info["bands"]]
        return dumps(body)

    @server.resource("metadata://{+file}/bands{?include_statistics}", name="metadata_bands", mime_type=JSON)
    async def all_bands(file: str, include_statistics: bool = False) -> str:
        """Every band: type, nodata, description, block shape, overviews; statistics when asked."""
        return await bands(file, None, include_statistics)

    @server.resource("metadata://{+file}/bands/{band}{?include_statistics}", name="metadata_band", mime_type=JSON)
    async def one_band(file: str, band: str, include_statistics: bool = False) -> str:
        """One band by number ('all' for every band, as gdal-mcp's bands/{_dummy})."""
        if band != "all" and not band.isdigit():
            raise ResourceError(f"band: {band!r} is not a band number (1-based) or 'all'")
        return await bands(file, None if band == "all" else int(band), include_statistics)


REFERENCE = (
    ("reference://crs/common", "crs", "Common CRSs by coverage (global, continental, utm, national, datums)."),
    ("reference://resampling/guide", "resampling", "Which resampling method to use, method by method."),
    ("reference://resampling/available", "resampling", "Resampling methods by category (one line each)."),
    ("reference://compression/available", "compression", "GeoTIFF/COG compression options (lossless, lossy…)."),
    ("reference://glossary/geospatial", "glossary", "Geospatial terms used by the tools and their results."),
    ("reference://raster/operations", "raster", "How to use band math, terrain, clip and mosaic (grammar, rules)."),
)
"""(base URI, document, description): the whole document at the base URI, sections at `<base>/{filter}`."""


def reference_text(base: str, word: str = "all") -> str:
    """The markdown at `base` for `word` (a section key, a tag or 'all'); one line per method for `available`.

    Raises:
        ResourceError: no section or tag is `word`; the message lists the accepted words.
    """
    name = next(n for b, n, _ in REFERENCE if b == base)
    doc = reference.load(name)
    text = doc.index(word) if base == "reference://resampling/available" else doc.select(word)
    if text is None:
        raise ResourceError(f"{base}/{word}: no such section; use 'all' or one of: {', '.join(doc.keys())}")
    return text


def _whole_documents(server: "MCPServer") -> None:
    for base, _, description in REFERENCE:
        slug = base.removeprefix("reference://").replace("/", "_")
        server.resource(base, name=slug, description=description, mime_type=MARKDOWN)(functools.partial(_whole, base))


async def _whole(base: str) -> str:
    return reference_text(base)


def register_reference(server: "MCPServer", runtime: "Gateway") -> None:
    """`reference://…`: common CRSs, resampling guide and index, compression options, glossary (our own text)."""
    _whole_documents(server)

    @server.resource("reference://crs/common/{coverage}", name="crs_common_by_coverage", mime_type=MARKDOWN)
    async def crs(coverage: str) -> str:
        """Common CRSs for one coverage: global, continental, utm, national, datums (or a tag such as metric)."""
        return reference_text("reference://crs/common", coverage)

    @server.resource("reference://resampling/guide/{method}", name="resampling_guide_by_method", mime_type=MARKDOWN)
    async def resampling_guide(method: str) -> str:
        """When to use one resampling method (or a group: categorical, continuous, aggregation…)."""
        return reference_text("reference://resampling/guide", method)

    @server.resource("reference://resampling/available/{category}", name="resampling_by_category", mime_type=MARKDOWN)
    async def resampling_available(category: str) -> str:
        """Resampling methods of one category: interpolation, aggregation, categorical, continuous, or all."""
        return reference_text("reference://resampling/available", category)

    @server.resource("reference://compression/available/{kind}", name="compression_by_kind", mime_type=MARKDOWN)
    async def compression(kind: str) -> str:
        """Compression options of one kind (lossless, lossy, imagery, float…) or one method (deflate…)."""
        return reference_text("reference://compression/available", kind)

    @server.resource("reference://glossary/geospatial/{term}", name="glossary_term", mime_type=MARKDOWN)
    async def glossary(term: str) -> str:
        """The definition of one term (crs, nodata, cog, …) or of a group of terms (format, vector…)."""
        return reference_text("reference://glossary/geospatial", term)

    @server.resource("reference://raster/operations/{operation}", name="raster_operation", mime_type=MARKDOWN)
    async def raster_operation(operation: str) -> str:
        """How to use one analysis tool: calc (the expression grammar), terrain, clip or mosaic (or a tool name)."""
        return reference_text("reference://raster/operations", operation)


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """All GDAL resources: catalog, metadata and reference."""
    register_catalog(server, runtime)
    register_metadata(server, runtime)
    register_reference(server, runtime)
