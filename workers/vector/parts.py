"""The partitions of a large `vector_overlay` or `vector_join` (`workers.vector.partition`): what each cell computes,
and how the fan-in writes the layer from the cells' parts."""

from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd
from pyproj import CRS

from schemas.tools.overlay import VectorJoinArgs, VectorJoinResult, VectorOverlayArgs, VectorOverlayResult
from schemas.tools.tiling import TileArgs, TileResult
from workers.jobkit.context import JobContext
from workers.vector import join, overlay
from workers.vector.aggregate import check_numeric
from workers.vector.assemble import keyed, write_parts
from workers.vector.layers import FID1, FID2, Target, said_move, target
from workers.vector.metric import Measure, extent_metres, measure_of
from workers.vector.nearest import nearest_pairs
from workers.vector.partition import Box, Partition, around, merged, part_paths

_BOTH_SIDES = frozenset({"union", "symmetric_difference"})
"""Overlays that keep what is left of the second layer's features: a cell computes those of its own too."""


def run_overlay(tile: TileArgs, ctx: JobContext) -> TileResult:
    """The overlay features this cell's features make: pairs and remainders of its first-layer features, and (union,
    symmetric difference) remainders of its second-layer ones."""
    cell, args = Partition.of(tile, ctx), VectorOverlayArgs.model_validate(tile.plan["args"])
    left, repaired = cell.own(0, args.make_valid)
    owned_left = left.index
    right = cell.near(1, left, (0.0, 0.0), args.make_valid)
    owned_right = right.index[:0]
    if args.how in _BOTH_SIDES:
        mine, right_repaired = cell.own(1, args.make_valid)
        owned_right, repaired = mine.index, repaired + right_repaired
        left, right = merged(left, cell.near(0, mine, (0.0, 0.0), args.make_valid)), merged(right, mine)
    ctx.progress(0, 2, f"cell {tile.index}: {len(left)} and {len(right)} features")
    first, second = overlay.prepared(left, right, args.suffixes)
    dimension = tile.plan.get("dimension")
    how, keep = args.how, args.keep_geom_type
    # in geopandas's order: the fan-in orders every part's features together (sorting each here cost 4% of a cell)
    result = overlay.overlaid(first, second, how, keep, dimension, in_order=False)  # type: ignore[arg-type]
    ids = [result[c] if c in result else pd.Series(np.nan, index=result.index) for c in (FID1, FID2)]
    kept = result[ids[0].isin(owned_left) | (ids[0].isna() & ids[1].isin(owned_right))]
    part, described = keyed(overlay.without_ids(kept), overlay.order_keys(kept))
    cell.save(part)
    return TileResult(index=tile.index, window=tile.window, partial={"repaired": repaired, **described})


def assemble_overlay(
    args: VectorOverlayArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext
) -> VectorOverlayResult:
    """Write the cells' overlay features as one layer."""
    described = _written(args, first, tiles, ctx)
    counts = list(first.plan["counts"])  # type: ignore[arg-type]
    return VectorOverlayResult(how=args.how, input_feature_counts=counts, repaired=_sum(tiles, "repaired"), **described)


def _written(
    args: VectorOverlayArgs | VectorJoinArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext
) -> dict[str, Any]:
    out = _target(args, first, ctx)
    ordered = sorted(tiles, key=lambda t: t.index)
    paths = part_paths(str(first.plan["folder"]), [t.index for t in ordered])
    crs = first.plan["crs"][0]  # type: ignore[index]
    described = [dict(t.partial) for t in ordered]  # type: ignore[arg-type]
    return write_parts(
        paths, described, out, ctx, CRS(crs).to_string() if crs else None, str(first.plan["geometry_type"])
    )


def run_join(tile: TileArgs, ctx: JobContext) -> TileResult:
    """The joined features of this cell's first-layer features: every second-layer feature that can match them is
    read (within `distance` of them; for the k nearest without one, as far out as their k-th nearest)."""
    cell, args = Partition.of(tile, ctx), VectorJoinArgs.model_validate(tile.plan["args"])
    tree = None
    if cell.runs:  # every feature of its run, each against the whole second layer (its repairs counted once)
        left, repaired = cell.run(args.make_valid)
        held = cell.broadcast(args.make_valid)
        right, tree = held.frame, held.tree
        repaired += held.repaired if tile.index == 0 else 0
    else:
        left, repaired = cell.own(0, args.make_valid)
        right = _candidates(cell, left, args)
    check_numeric(right, args.aggregates or {}, "aggregates")
    frame, matched = join.joined(left, right, args, tree)
    part, described = keyed(join.without_ids(frame), join.order_keys(frame))
    cell.save(part)
    partial = {"repaired": repaired, "matched": matched, "owned": len(left), **described}
    return TileResult(index=tile.index, window=tile.window, partial=partial)


def _candidates(cell: Partition, left: gpd.GeoDataFrame, args: VectorJoinArgs) -> gpd.GeoDataFrame:
    """The second layer's features that can match `left`'s."""
    measure = measure_of(left.crs)
    if args.mode != "nearest" or args.distance is not None or not len(left):
        metres = args.distance if args.predicate == "dwithin" or args.mode == "nearest" else None
        return cell.near(1, left, _reach(left, measure, metres or 0.0), args.make_valid)
    x0, y0, x1, y1 = cell.grid.bounds
    reach = extent_metres((x0, y0, x1, y1), measure) / max(cell.grid.columns, cell.grid.rows) or 1.0
    while True:
        box = around(left, _reach(left, measure, reach))
        right = cell.read(1, box, args.make_valid)[0]
        if len(right) >= cell.plan["counts"][1] or _reaches(left, right, box, args.k, measure):
            return right
        reach *= 4


def _reach(frame: gpd.GeoDataFrame, measure: Measure, metres: float) -> tuple[float, float]:
    """How far, in CRS units along x and y, the box of `frame`'s features must grow to hold all within `metres`."""
    if not len(frame) or metres == 0:
        return 0.0, 0.0
    dx, dy = measure.margin(frame.total_bounds.reshape(1, 4), metres)
    return float(dx.max()), float(dy.max())


def _reaches(left: gpd.GeoDataFrame, right: gpd.GeoDataFrame, box: Box | None, k: int, measure: Measure) -> bool:
    """Whether the k nearest of every feature of `left` among `right` are its k nearest in the whole layer: its
    bounding box grown by its k-th nearest distance lies within `box`, all that was read."""
    if box is None:
        return True
    geoms = left.geometry.values.to_numpy()
    li, _, dist = nearest_pairs(geoms, right.geometry.values.to_numpy(), k, None, measure)
    if (np.bincount(li, minlength=len(geoms)) < k).any():
        return False
    far = np.zeros(len(geoms))
    np.maximum.at(far, li, dist)
    b = left.bounds.to_numpy()
    dx, dy = measure.margin(b, 1.0)
    grown = np.c_[b[:, 0] - dx * far, b[:, 1] - dy * far, b[:, 2] + dx * far, b[:, 3] + dy * far]
    return bool((grown[:, :2] >= np.array(box[:2])).all() and (grown[:, 2:] <= np.array(box[2:])).all())


def assemble_join(args: VectorJoinArgs, first: TileArgs, tiles: list[TileResult], ctx: JobContext) -> VectorJoinResult:
    counts = list(first.plan["counts"])  # type: ignore[arg-type]
    described = _written(args, first, tiles, ctx)
    if args.how == "left":  # features without geometry belong to no cell (a run has them): one process drops them
        described["empty_dropped"] += counts[0] - _sum(tiles, "owned")
    return VectorJoinResult(
        mode=args.mode,
        matched=_sum(tiles, "matched"),
        input_feature_counts=counts,
        repaired=_sum(tiles, "repaired"),
        **described,
    )


def _target(args: VectorOverlayArgs | VectorJoinArgs, first: TileArgs, ctx: JobContext) -> Target:
    out = target(args, ctx)
    a, b = first.plan["crs"]  # type: ignore[misc]
    said_move(out, a or None, b or None)
    return out


def _sum(tiles: list[TileResult], key: str) -> int:
    return sum(int(t.partial[key]) for t in tiles)  # type: ignore[index, call-overload]
