"""Job `zonal_stats`: per-polygon statistics of a raster band with exactextract (exact pixel coverage fractions).

exactextract reads the raster through the open rasterio dataset (so a remote COG is read by ranges, one window
per polygon) and weighs each pixel by the share of it a polygon covers. Zones are read with pyogrio and, when
their CRS differs from the raster's, transformed with pyproj before extraction.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import shapely
from exactextract import exact_extract
from exactextract.feature import JSONFeatureSource
from exactextract.raster import RasterioRasterSource
from pyproj import CRS, Transformer

from schemas.tools.analysis import ZonalStatsArgs, ZonalStatsResult, ZoneStats
from schemas.tools.base import Reprojection
from workers.gdal.errors import check_bands, open_raster, require_georeferenced
from workers.gdal.outputs import file_ref
from workers.gdal.vector_io import Layer, output_driver, read_layer, write_layer
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import output_path, raster_input, resolve_in_workspace
from workers.jobkit.limits import check_zones

BATCH = 500
"""Features per exactextract call: progress (and cancellation) is checked between batches."""

_OPS = {"count": "count", "min": "min", "max": "max", "mean": "mean", "sum": "sum", "std": "stdev"}
_OPS |= {"median": "median", "majority": "majority"}


def ids_of(layer: Layer, id_field: str | None) -> list[Any]:
    if id_field is None:
        return list(range(len(layer.geometry)))
    if id_field not in layer.fields:
        raise JobFailed(
            "field.not_found",
            f"id_field: {id_field!r} is not an attribute of the layer ({layer.fields})",
            field="id_field",
        )
    column = layer.columns[layer.fields.index(id_field)]
    values = [v.item() if isinstance(v, np.generic) else v for v in column]
    return [v if isinstance(v, int | str) else str(v) for v in values]


def check_polygons(geometry: np.ndarray) -> None:
    present = ~shapely.is_missing(geometry)
    kinds = shapely.get_type_id(geometry)
    bad = np.flatnonzero(present & ~np.isin(kinds, [3, 6]))
    if bad.size:
        kind = shapely.get_type_id(geometry[bad[0]])
        names = {0: "Point", 1: "LineString", 2: "LinearRing", 4: "MultiPoint", 5: "MultiLineString", 7: "Collection"}
        raise JobFailed(
            "geometry.unsupported",
            f"zones: feature {int(bad[0])} is a {names.get(int(kind), 'non-polygon')}; zonal statistics need polygons",
            field="zones",
        )


def to_raster_crs(layer: Layer, raster_crs: CRS | None) -> tuple[np.ndarray, list[Reprojection]]:
    """The zones' geometries in the raster's CRS, and the reprojection when they had to be transformed."""
    if layer.crs is None or raster_crs is None:
        return layer.geometry, []
    zones_crs = CRS.from_user_input(layer.crs)
    if zones_crs == raster_crs:
        return layer.geometry, []
    transformer = Transformer.from_crs(zones_crs, raster_crs, always_xy=True)
    moved = shapely.transform(layer.geometry, lambda xy: np.column_stack(transformer.transform(xy[:, 0], xy[:, 1])))
    return moved, [Reprojection(input="zones", from_crs=layer.crs, to_crs=raster_crs.to_string())]


def _stats_of(props: dict[str, Any], wanted: list[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in wanted:
        value = props.get(_OPS[name])
        out[name] = None if value is None or (isinstance(value, float) and np.isnan(value)) else float(value)
    if out.get("count") == 0:  # no valid pixel under the polygon: exactextract's 0/NaN figures mean nothing
        out = {k: (0.0 if k == "count" else None) for k in out}
    return out


def extract(
    src: Any, band: int, geometry: np.ndarray, stats: list[str], weight: str, report: Callable[[int, int], None]
) -> list[dict]:
    """Statistics `stats` of `band` per geometry (None for an empty one), pixels weighed by `weight` (`fraction`
    or `none`); `report(done, total)` after each batch of zones (where a cancel lands)."""
    ops = [_OPS[s] if weight == "fraction" else f"{_OPS[s]}(coverage_weight=none)" for s in stats]
    rows: list[dict] = []
    raster = RasterioRasterSource(src, band)
    for start in range(0, len(geometry), BATCH):
        chunk = geometry[start : start + BATCH]
        features = [
            {"type": "Feature", "id": start + i, "properties": {"gg_index": start + i}, "geometry": json.loads(g)}
            for i, g in enumerate(shapely.to_geojson(chunk))
            if g is not None and g != "null"
        ]
        found = exact_extract(raster, JSONFeatureSource(features), ops, include_cols=["gg_index"]) if features else []
        by_index = {f["properties"]["gg_index"]: f["properties"] for f in found}
        rows += [_stats_of(by_index.get(start + i, {"count": 0}), stats) for i in range(len(chunk))]
        report(min(start + BATCH, len(geometry)), len(geometry))
    return rows


def zones_progress(ctx: JobContext) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        ctx.progress(done, total, f"zonal statistics: {done}/{total} zones")

    return report


def zonal_stats(args: ZonalStatsArgs, ctx: JobContext) -> ZonalStatsResult:
    """Statistics of `args.band` per polygon of `args.zones`, per feature or written to `args.output`.

    Raises:
        JobFailed: a path outside the workspace or a host not allowed, an unreadable raster or layer, a band or
            `id_field` that does not exist, an ungeoreferenced raster, an existing output without `overwrite`.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    source = raster_input(args.uri, ctx.roots, ctx.settings)
    zones_path = resolve_in_workspace(args.zones, ctx.roots, field="zones")
    dst: Path | None = None
    if args.output is not None:
        dst = output_path(args.output, ctx.roots, overwrite=args.overwrite)
        driver = output_driver(args.driver, dst)
    layer = read_layer(zones_path, args.layer, ctx, field="zones", counted=lambda n: check_zones(ctx, n, "zones"))
    check_polygons(layer.geometry)
    ids = ids_of(layer, args.id_field)
    with open_raster(source) as src:
        check_bands([args.band], src.count, "band")
        require_georeferenced(src)
        raster_crs = src.crs.to_string() if src.crs else None
        geometry, reprojected = to_raster_crs(layer, CRS.from_user_input(src.crs) if src.crs else None)
        rows = extract(src, args.band, geometry, list(args.stats), args.coverage_weight, zones_progress(ctx))
    common = {
        "band": args.band,
        "raster_crs": raster_crs,
        "zones_crs": layer.crs,
        "reprojected": reprojected,
        "feature_count": len(rows),
        "stats": list(args.stats),
        "coverage_weight": args.coverage_weight,
    }
    if dst is None:
        return ZonalStatsResult(**common, features=[ZoneStats(id=i, **row) for i, row in zip(ids, rows, strict=True)])
    columns = [
        np.array([row[s] if row[s] is not None else np.nan for row in rows], dtype="float64") for s in args.stats
    ]
    names = [f"zs_{s}" for s in args.stats]
    written = Layer(layer.name, driver, layer.crs, layer.fields + names, layer.columns + columns, layer.geometry)
    write_layer(written, dst, driver, layer.crs, fence=ctx.fence)
    return ZonalStatsResult(**common, output=file_ref(dst, driver))
