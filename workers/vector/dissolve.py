"""`vector_dissolve`: features merged by the values of some fields (or all into one), with aggregates of others."""

import geopandas as gpd
import pandas as pd

from schemas.tools.overlay import VectorDissolveArgs, VectorDissolveResult
from workers.jobkit.context import JobContext
from workers.vector.aggregate import check_numeric, grouped
from workers.vector.layers import GEOMETRY, check_fields, read_input, target, write_result

_ALL = "__geogate_all"
"""The key every feature shares when no `by` field is given."""


def vector_dissolve(args: VectorDissolveArgs, ctx: JobContext) -> VectorDissolveResult:
    """Union the geometries of the features that share the values of `args.by` (all of them when it is empty),
    with `args.aggregates` over each group; features with empty `by` values make a group of their own. An empty
    layer writes an empty layer.

    Raises:
        JobFailed: path, layer, read and write errors; `field.not_found` (on `by` or `aggregates`);
            `field.not_numeric` (a sum or mean of text); `geometry.invalid`; `limit.features`.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    out = target(args, ctx)
    read = read_input(args.uri, args.layer, ctx, field="uri", layer_field="layer", make_valid=args.make_valid)
    check_fields(read, args.by, "by")
    check_fields(read, list(args.aggregates), "aggregates")
    check_numeric(read.frame, args.aggregates, "aggregates")
    ctx.progress(1, 3, "read uri")
    keys = list(args.by) or [_ALL]
    frame = read.frame if args.by else read.frame.assign(**{_ALL: 0})
    shapes = frame[[*keys, GEOMETRY]].dissolve(by=keys, dropna=False, sort=True).reset_index()
    values = grouped(frame, keys, args.aggregates).reset_index(drop=True)
    merged = pd.concat([shapes.drop(columns=[GEOMETRY]), values, shapes[[GEOMETRY]]], axis=1)
    result = gpd.GeoDataFrame(merged.drop(columns=[_ALL], errors="ignore"), geometry=GEOMETRY, crs=read.frame.crs)
    ctx.progress(2, 3, f"{len(result)} groups")
    described = write_result(result, out, ctx, read.geometry_type)
    return VectorDissolveResult(
        by=list(args.by), input_feature_counts=[len(read.frame)], repaired=read.repaired, **described
    )
