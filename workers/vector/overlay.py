"""`vector_overlay`: two layers cut against each other with geopandas.overlay, both layers' attributes kept."""

import geopandas as gpd
import numpy as np
import shapely
import shapely.errors

from schemas.tools.overlay import VectorOverlayArgs, VectorOverlayResult
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.vector.layers import aligned, read_input, suffixed, target, write_result


def vector_overlay(args: VectorOverlayArgs, ctx: JobContext) -> VectorOverlayResult:
    """Overlay `args.other` on `args.uri` (`args.how`), in the first layer's CRS; features without geometry take no
    part. An overlay that leaves nothing writes an empty layer.

    Raises:
        JobFailed: path, layer, read and write errors; `geometry.invalid` (invalid inputs, `make_valid` false);
            `geometry.mixed` (a layer mixes points, lines and polygons); `field.clash`; `limit.features`.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    out = target(args, ctx)
    first = read_input(args.uri, args.layer, ctx, field="uri", layer_field="layer", make_valid=args.make_valid)
    ctx.progress(1, 4, "read uri")
    second = read_input(
        args.other, args.other_layer, ctx, field="other", layer_field="other_layer", make_valid=args.make_valid
    )
    ctx.progress(2, 4, "read other")
    left, right = suffixed(first, aligned(first, second, out), args.suffixes)
    left, right = _with_geometry(left), _with_geometry(right)
    for frame, name in ((left, "uri"), (right, "other")):
        _one_kind(frame.geometry.values.to_numpy(), name)
    try:
        result = gpd.overlay(left, right, how=args.how, keep_geom_type=args.keep_geom_type)
    except (NotImplementedError, TypeError) as exc:  # geometry kinds geopandas cannot overlay
        raise JobFailed("geometry.mixed", f"uri: these layers cannot be overlaid: {exc}", field="uri") from exc
    except shapely.errors.GEOSException as exc:
        message = f"uri: GEOS could not overlay these geometries ({exc}); try make_valid=true"
        raise JobFailed("geometry.invalid", message, field="uri") from exc
    ctx.progress(3, 4, f"{args.how}: {len(result)} features")
    described = write_result(result, out, ctx, first.geometry_type)
    counts = [len(first.frame), len(second.frame)]
    repaired = first.repaired + second.repaired
    return VectorOverlayResult(how=args.how, input_feature_counts=counts, repaired=repaired, **described)


def _with_geometry(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    geometry = frame.geometry.values.to_numpy()
    return frame[~shapely.is_missing(geometry) & ~shapely.is_empty(geometry)]


def _one_kind(geometry: np.ndarray, name: str) -> None:
    """Refuse a layer of more than one of points, lines and polygons, or with geometry collections.

    Raises:
        JobFailed: `geometry.mixed`, on `name`.
    """
    if (shapely.get_type_id(geometry) == shapely.GeometryType.GEOMETRYCOLLECTION).any():
        message = f"{name}: the layer holds geometry collections; split them into points, lines or polygons first"
        raise JobFailed("geometry.mixed", message, field=name)
    if len(set(shapely.get_dimensions(geometry).tolist())) > 1:
        message = f"{name}: the layer mixes points, lines and polygons; overlay one kind at a time"
        raise JobFailed("geometry.mixed", message, field=name)
