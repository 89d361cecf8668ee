"""`raster_contours` by tiles: each tile traces the cells of its window with contourpy, reading one more column and
row where another window follows, so that every cell between four pixel centres is traced by exactly one tile; the
fan-in joins the lines of one level that end and start at the same point of a seam.

Tiles trace in the whole band's pixel coordinates (contourpy given the window's column and row numbers), so a point
where a line crosses a seam is computed from the same two pixels with the same numbers by both tiles and by the whole
run: the ends meet exactly, and a line is mapped to the raster's CRS as the whole run maps it.
"""

from pathlib import Path

import contourpy
import numpy as np
import shapely
from affine import Affine
from rasterio.windows import Window

from schemas.tools.analysis import RasterContoursArgs, RasterContoursResult
from schemas.tools.tiling import TileArgs, TileResult
from workers.gdal.errors import open_raster
from workers.gdal.shapes import contour_levels
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

ON_SEAM = 1e-9
"""How far (in pixels) a line's end may be from a seam and still end on it: contourpy interpolates both coordinates
of a point on a cell's side, so one that should be whole may be off by a rounding."""


def plan(args: RasterContoursArgs, ctx: JobContext) -> Plan | None:
    """Windows of the band; each tile gets the call's arguments to find its levels."""
    return plan_trace(args, ctx, traced_as="float64", call=args.model_dump(mode="json"))


def _count(args: RasterContoursArgs, ctx: JobContext) -> FeatureCount:
    return FeatureCount(ctx, "interval" if args.levels is None else "levels", "lines")


def _in_crs(points: np.ndarray, transform: Affine) -> np.ndarray:
    """Pixel-centre numbers (column, row) to the raster's CRS, as the whole run maps them."""
    xs, ys = transform * (points[:, 0] + 0.5, points[:, 1] + 0.5)
    return np.column_stack([xs, ys])


def _lines(generator: contourpy.ContourGenerator, level: float) -> list[np.ndarray]:
    """The level's lines of at least two points, each as its points (column, row)."""
    (points,), (offsets,) = generator.lines(level)
    if points is None:
        return []
    return [points[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True) if b - a >= 2]


def _ends_on(line: np.ndarray, columns: list[int], rows: list[int]) -> bool:
    ends = line[[0, -1]]
    return any(np.abs(ends[:, 0] - c).min() < ON_SEAM for c in columns) or any(
        np.abs(ends[:, 1] - r).min() < ON_SEAM for r in rows
    )


def run(args: TileArgs, ctx: JobContext) -> TileResult:
    """Trace the window's cells at the call's levels in its range; lines that end on a seam are kept in pixels."""
    plan, window = args.plan, args.window
    call = RasterContoursArgs.model_validate(plan["call"])
    width, height = whole_number(plan, "width"), whole_number(plan, "height")
    wide, tall = min(window.width + 1, width - window.col_off), min(window.height + 1, height - window.row_off)
    path = resolve_in_workspace(str(plan["source"]), ctx.roots)
    with open_raster(path) as src:
        wider = Window(window.col_off, window.row_off, wide, tall)
        band = src.read(whole_number(plan, "band"), window=wider, masked=True)
    data = np.ma.masked_invalid(band.astype("float64"))
    valid = data.compressed()
    levels = contour_levels(call, float(valid.min()), float(valid.max())) if valid.size else []
    cols = np.arange(window.col_off, window.col_off + wide, dtype="float64")
    rows = np.arange(window.row_off, window.row_off + tall, dtype="float64")
    generator = contourpy.contour_generator(x=cols, y=rows, z=data, line_type="ChunkCombinedOffset")
    columns, seam_rows = seams(window, width, height)
    count, transform = _count(call, ctx), transform_of(plan)
    inner, inner_levels, crossing, crossing_levels = [], [], [], []
    for n, level in enumerate(levels, start=1):
        for line in _lines(generator, level):
            if _ends_on(line, columns, seam_rows):
                crossing.append(shapely.linestrings(line))
                crossing_levels.append(level)
            else:
                count.add()
                inner.append(shapely.linestrings(_in_crs(line, transform)))
                inner_levels.append(level)
        ctx.progress(0, 1, f"{window.describe()}: level {n} of {len(levels)}")
    if ctx.fence is not None:
        ctx.fence.check()
    folder = Path(str(plan["folder"]))
    save_part(folder, f"tile{args.index}.whole", np.array(inner, dtype=object), np.array(inner_levels, dtype="float64"))
    save_part(
        folder, f"tile{args.index}.seam", np.array(crossing, dtype=object), np.array(crossing_levels, dtype="float64")
    )
    return TileResult(index=args.index, window=window, partial={"whole": len(inner), "seam": len(crossing)})


def join(lines: list[np.ndarray], columns: set[int], rows: set[int]) -> list[np.ndarray]:
    """Lines of one level joined where one ends at the point of a seam where another starts (and no other line
    ends or starts there), in the lines' direction; a chain that comes back to its start is a closed line."""
    starts: dict[tuple[float, float], list[int]] = {}
    ends: dict[tuple[float, float], list[int]] = {}
    for i, line in enumerate(lines):
        starts.setdefault(tuple(line[0].tolist()), []).append(i)
        ends.setdefault(tuple(line[-1].tolist()), []).append(i)
    after: dict[int, int] = {}
    for point, enders in ends.items():
        starters = starts.get(point, [])
        if len(enders) == 1 == len(starters) and enders != starters and _on_seam(point, columns, rows):
            after[enders[0]] = starters[0]
    firsts = [i for i in range(len(lines)) if i not in set(after.values())]
    seen: set[int] = set()
    joined = [_chain(lines, after, i, seen) for i in firsts]
    joined += [_chain(lines, after, i, seen) for i in range(len(lines)) if i not in seen]  # closed around
    return joined


def _on_seam(point: tuple[float, float], columns: set[int], rows: set[int]) -> bool:
    x, y = point
    return any(abs(x - c) < ON_SEAM for c in columns) or any(abs(y - r) < ON_SEAM for r in rows)


def _chain(lines: list[np.ndarray], after: dict[int, int], first: int, seen: set[int]) -> np.ndarray:
    parts, i = [lines[first]], first
    seen.add(first)
    while (i := after.get(i, -1)) >= 0 and i not in seen:
        seen.add(i)
        parts.append(lines[i][1:])
    return np.concatenate(parts)


def assemble(
    args: RasterContoursArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext
) -> RasterContoursResult:
    """The tiles' lines off the seams, then the lines their seam pieces make, level by level; written as the whole
    run would."""
    plan, folder = first.plan, Path(str(first.plan["folder"]))
    count, transform = _count(args, ctx), transform_of(plan)
    count.add(counted(tiles, "whole"))
    whole = [load_part(folder, f"tile{t.index}.whole") for t in tiles]
    pieces = [load_part(folder, f"tile{t.index}.seam") for t in tiles]
    columns = {t.window.col_off for t in tiles if t.window.col_off > 0}
    rows = {t.window.row_off for t in tiles if t.window.row_off > 0}
    piece_lines = np.concatenate([np.empty(0, dtype=object), *[g for g, _ in pieces]])
    piece_levels = np.concatenate([np.empty(0, dtype="float64"), *[v for _, v in pieces]])
    joined, joined_levels = [], []
    for level in np.unique(piece_levels).tolist():
        lines = [shapely.get_coordinates(g) for g in piece_lines[piece_levels == level]]
        made = join(lines, columns, rows)
        count.add(len(made))
        joined += [shapely.linestrings(_in_crs(line, transform)) for line in made]
        joined_levels += [level] * len(made)
    geometry = np.concatenate([np.empty(0, dtype=object), *[g for g, _ in whole], np.array(joined, dtype=object)])
    column = np.concatenate([np.empty(0, dtype="float64"), *[v for _, v in whole], np.array(joined_levels)])
    order = np.argsort(column, kind="stable")  # by level, as the whole run writes them
    crs = None if plan["crs"] is None else str(plan["crs"])
    layer = Layer(Path(args.output).stem, str(plan["driver"]), crs, [args.attribute], [column[order]], geometry[order])
    ctx.progress(0, 1, f"joined {len(joined)} lines across seams")
    return RasterContoursResult(
        output=publish_layer(args, plan, layer, ctx), feature_count=len(geometry), crs=crs,
        levels=np.unique(column).tolist(),
        method="contourpy marching squares over pixel centres (linear interpolation), nodata masked",
    )  # fmt: skip
