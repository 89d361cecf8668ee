"""`raster_polygonize` by tiles: each tile traces its window with GDAL's polygonizer (rasterio.features.shapes),
keeps the polygons that touch no seam as they are and those that do in pixel coordinates; the fan-in joins the
pieces of one region (same value, sharing an edge across a seam) by their union and writes the layer.

Pieces are traced and joined in pixel coordinates, where every vertex is a whole number and a union is exact;
coordinates are mapped to the raster's CRS the way GDAL's polygonizer maps them (origin + column·a + row·b, in that
order), so a polygon that touches no seam has the very coordinates of the whole run's. Calls with 8-connectivity
run whole: GDAL traces an 8-connected region as one ring that touches itself at the corners where its pixels meet,
which a union of pieces (a valid MultiPolygon there) does not reproduce.
"""

from pathlib import Path

import numpy as np
import rasterio.features
import shapely
from affine import Affine
from rasterio.windows import Window

from schemas.tools.analysis import RasterPolygonizeArgs, RasterPolygonizeResult
from schemas.tools.tiling import TileArgs, TileResult, TileWindow
from workers.gdal.errors import open_raster
from workers.gdal.polygon_floor import polygon_floor
from workers.gdal.shapes import REPORT_EVERY, SHAPES_DTYPES
from workers.gdal.trace_tiles import (
    counted,
    load_part,
    plan_trace,
    publish_layer,
    save_part,
    seams,
    transform_of,
    whole_number,
)
from workers.gdal.vector_io import Layer
from workers.jobkit.context import JobContext
from workers.jobkit.files import resolve_in_workspace
from workers.jobkit.limits import FeatureCount
from workers.tiling.declare import Plan
from workers.tiling.grid import settings_of


def plan(args: RasterPolygonizeArgs, ctx: JobContext) -> Plan | None:
    """Windows of the band for a 4-connected call of a band GDAL polygonizes as it is, from
    `GEOGATE_TILE_POLYGONIZE_MIN_PIXELS` (else the call runs whole)."""
    if args.connectivity != 4:
        return None
    tiled = plan_trace(args, ctx, min_pixels=settings_of(ctx).tile_polygonize_min_pixels)
    return tiled if tiled is not None and tiled.shared["dtype"] in SHAPES_DTYPES else None


def _window(window: TileWindow) -> Window:
    return Window(window.col_off, window.row_off, window.width, window.height)


def _to_crs(geometry: np.ndarray, transform: Affine) -> np.ndarray:
    """Pixel coordinates to the raster's CRS, in the order of GDAL's polygonizer's arithmetic."""

    def move(xy: np.ndarray) -> np.ndarray:
        col, row = xy[:, 0], xy[:, 1]
        return np.column_stack([transform.c + col * transform.a + row * transform.b,
                                transform.f + col * transform.d + row * transform.e])  # fmt: skip

    return shapely.transform(geometry, move)


def run(args: TileArgs, ctx: JobContext) -> TileResult:
    """Trace the window's polygons; keep those off the seams in the raster's CRS and the others in pixels."""
    plan, window = args.plan, args.window
    width, height = whole_number(plan, "width"), whole_number(plan, "height")
    path = resolve_in_workspace(str(plan["source"]), ctx.roots)
    with open_raster(path) as src:
        band = src.read(whole_number(plan, "band"), window=_window(window), masked=True)
    data, valid = band.data, ~np.ma.getmaskarray(band)
    if data.dtype.kind == "f":
        valid &= np.isfinite(data)
    columns, rows = seams(window, width, height)
    count = FeatureCount(ctx, "uri", "polygons")
    # A piece that touches no seam is a polygon of the whole run; the others are at most the pixels along the seams.
    along = len(columns) * window.height + len(rows) * window.width
    count.at_least(polygon_floor(data, valid, 4) - along)
    ctx.progress(0, 1, f"tracing {window.describe()}")
    geoms, values = [], []
    at = Affine.translation(window.col_off, window.row_off)
    for geojson, value in rasterio.features.shapes(data, mask=valid, connectivity=4, transform=at):
        geoms.append(shapely.geometry.shape(geojson))
        values.append(value)
        if len(geoms) % REPORT_EVERY == 0:
            ctx.progress(0, 1, f"traced {len(geoms)} polygons")
    geometry = np.array(geoms, dtype=object)
    column = np.array(values, dtype="float64" if data.dtype.kind == "f" else "int64")
    on_seam = _on_seam(geometry, columns, rows)
    count.add(int(np.count_nonzero(~on_seam)))
    if ctx.fence is not None:
        ctx.fence.check()
    folder = Path(str(plan["folder"]))
    save_part(folder, f"tile{args.index}.whole", _to_crs(geometry[~on_seam], transform_of(plan)), column[~on_seam])
    save_part(folder, f"tile{args.index}.seam", geometry[on_seam], column[on_seam])
    partial = {"whole": int(np.count_nonzero(~on_seam)), "seam": int(np.count_nonzero(on_seam))}
    return TileResult(index=args.index, window=window, partial=partial)


def _on_seam(geometry: np.ndarray, columns: list[int], rows: list[int]) -> np.ndarray:
    """Which polygons reach a seam column or row (their bounds are whole pixel edges)."""
    on = np.zeros(len(geometry), dtype=bool)
    if not len(geometry):
        return on
    bounds = shapely.bounds(geometry)
    for column in columns:
        on |= (bounds[:, 0] == column) | (bounds[:, 2] == column)
    for row in rows:
        on |= (bounds[:, 1] == row) | (bounds[:, 3] == row)
    return on


def stitch(geometry: np.ndarray, values: np.ndarray, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The regions the pieces make: pieces of one value whose boundaries share an edge (pieces of different tiles;
    a tile's own pieces of one value never do) joined by their union, the others as they are."""
    if not len(geometry):
        return geometry, values
    left, right = shapely.STRtree(geometry).query(geometry)  # by their boxes: a predicate here costs seconds
    pair = (left < right) & (values[left] == values[right]) & (tiles[left] != tiles[right])
    left, right = left[pair], right[pair]
    edge = shapely.relate_pattern(geometry[left], geometry[right], "****1****")
    root = np.arange(len(geometry))
    for a, b in zip(left[edge].tolist(), right[edge].tolist(), strict=True):
        ra, rb = _root(root, a), _root(root, b)
        if ra != rb:
            root[max(ra, rb)] = min(ra, rb)
    roots = np.array([_root(root, i) for i in range(len(geometry))], dtype="int64")
    order = np.argsort(roots, kind="stable")
    starts = np.flatnonzero(np.r_[True, roots[order][1:] != roots[order][:-1]])
    groups = np.split(order, starts[1:])
    joined = [geometry[g[0]] if len(g) == 1 else shapely.union_all(geometry[g]) for g in groups]
    return np.array(joined, dtype=object), values[[g[0] for g in groups]]


def _root(root: np.ndarray, i: int) -> int:
    while root[i] != i:
        root[i] = root[root[i]]
        i = int(root[i])
    return i


def assemble(
    args: RasterPolygonizeArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext
) -> RasterPolygonizeResult:
    """The tiles' polygons off the seams, then the regions their seam pieces make; written as the whole run would."""
    plan, folder = first.plan, Path(str(first.plan["folder"]))
    count = FeatureCount(ctx, "uri", "polygons")
    count.add(counted(tiles, "whole"))
    whole = [load_part(folder, f"tile{t.index}.whole") for t in tiles]
    pieces = [load_part(folder, f"tile{t.index}.seam") for t in tiles]
    tile_of = np.concatenate([np.full(len(g), t.index) for t, (g, _) in zip(tiles, pieces, strict=True)])
    dtype = "float64" if np.dtype(str(plan["dtype"])).kind == "f" else "int64"
    joined, joined_values = stitch(
        np.concatenate([np.empty(0, dtype=object), *[g for g, _ in pieces]]),
        np.concatenate([np.empty(0, dtype=dtype), *[v for _, v in pieces]]),
        tile_of,
    )
    count.add(len(joined))
    geometry = np.concatenate([np.empty(0, dtype=object), *[g for g, _ in whole], _to_crs(joined, transform_of(plan))])
    column = np.concatenate([np.empty(0, dtype=dtype), *[v for _, v in whole], joined_values])
    crs = None if plan["crs"] is None else str(plan["crs"])
    layer = Layer(Path(args.output).stem, str(plan["driver"]), crs, [args.field_name], [column], geometry)
    ctx.progress(0, 1, f"stitched {len(joined)} polygons across seams")
    return RasterPolygonizeResult(
        output=publish_layer(args, plan, layer, ctx), feature_count=len(geometry), crs=crs, band=args.band,
        connectivity=args.connectivity, distinct_values=len(set(column.tolist())),
    )  # fmt: skip
