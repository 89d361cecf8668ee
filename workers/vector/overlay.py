"""`vector_overlay`: two layers cut against each other with geopandas.overlay (an intersection of polygon layers
as it computes one, without its overheads), both layers' attributes kept.

Every result feature comes from a feature of the first layer (`FID1`), of the second (`FID2`), or a pair of them, and
is written in the order of those ids: pairs, then what is left of first-layer features, then of second-layer
features. The partitioned run (`workers.vector.partitions`) computes each feature where its source features live and
puts them back in the same order."""

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
import shapely.errors

from schemas.tools.overlay import VectorOverlayArgs, VectorOverlayResult
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.vector.layers import FID1, FID2, GEOMETRY, aligned, read_input, suffixed, target, write_result


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
    left, right = prepared(first.frame, aligned(first, second, out), args.suffixes)
    result = without_ids(overlaid(left, right, args.how, args.keep_geom_type))
    ctx.progress(3, 4, f"{args.how}: {len(result)} features")
    described = write_result(result, out, ctx, first.geometry_type)
    counts = [len(first.frame), len(second.frame)]
    repaired = first.repaired + second.repaired
    return VectorOverlayResult(how=args.how, input_feature_counts=counts, repaired=repaired, **described)


def prepared(
    first: gpd.GeoDataFrame, second: gpd.GeoDataFrame, suffixes: list[str]
) -> tuple[gpd.GeoDataFrame, gpd.GeoDataFrame]:
    """Both layers (indexed by feature id, `second` in `first`'s CRS) ready to overlay: fields suffixed, features
    without geometry left out, their ids as `FID1` / `FID2`.

    Raises:
        JobFailed: `field.clash` (on `suffixes`); `geometry.mixed` (on the layer's argument).
    """
    left, right = suffixed(first, second, suffixes)
    left, right = _with_geometry(left), _with_geometry(right)
    for frame, name in ((left, "uri"), (right, "other")):
        _one_kind(frame.geometry.values.to_numpy(), name)
    return left.assign(**{FID1: left.index.to_numpy()}), right.assign(**{FID2: right.index.to_numpy()})


def overlaid(
    left: gpd.GeoDataFrame,
    right: gpd.GeoDataFrame,
    how: str,
    keep_geom_type: bool,
    dimension: int | None = None,
    *,
    in_order: bool = True,
) -> gpd.GeoDataFrame:
    """The overlay of two `prepared` layers with their `FID1` / `FID2`, in their order (in geopandas's when not
    `in_order`: a partition's, which the fan-in orders with every other's). `dimension` is that of the whole first
    layer's geometries, for a part of it with no feature (whose own overlay has no type to keep).

    Raises:
        JobFailed: `geometry.mixed` (kinds geopandas cannot overlay); `geometry.invalid` (GEOS failed).
    """
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`keep_geom_type=True` is invalid when df1 is empty")
            result = (
                _intersection(left, right, keep_geom_type)
                if how == "intersection" and _polygonal(left) and _polygonal(right) and not _shared(left, right)
                else gpd.overlay(left, right, how=how, keep_geom_type=keep_geom_type)
            )
    except (NotImplementedError, TypeError) as exc:  # geometry kinds geopandas cannot overlay
        raise JobFailed("geometry.mixed", f"uri: these layers cannot be overlaid: {exc}", field="uri") from exc
    except shapely.errors.GEOSException as exc:
        message = f"uri: GEOS could not overlay these geometries ({exc}); try make_valid=true"
        raise JobFailed("geometry.invalid", message, field="uri") from exc
    if keep_geom_type and len(left) == 0 and dimension is not None and len(result):
        result = result[shapely.get_dimensions(result.geometry.values.to_numpy()) == dimension]
    return ordered(result) if in_order else result


_POLYGONS = (shapely.GeometryType.POLYGON, shapely.GeometryType.MULTIPOLYGON)


def _polygonal(frame: gpd.GeoDataFrame) -> bool:
    return len(frame) > 0 and bool(np.isin(shapely.get_type_id(frame.geometry.values.to_numpy()), _POLYGONS).all())


def _shared(left: gpd.GeoDataFrame, right: gpd.GeoDataFrame) -> set[str]:
    """Field names both layers have (none once `prepared`: geopandas would suffix them)."""
    return (set(left.columns) & set(right.columns)) - {left.geometry.name, right.geometry.name}


def _intersection(left: gpd.GeoDataFrame, right: gpd.GeoDataFrame, keep_geom_type: bool) -> gpd.GeoDataFrame:
    """`gpd.overlay(left, right, how="intersection")` of two `prepared` polygon layers, the same features and
    geometries, without what it spends beside GEOS: the layers' validity (checked when they were read) and its
    frames' merges; and a result polygon is repaired only when invalid (`make_valid` returns a valid one as it is,
    at twice the cost of asking). 50,000 × 50,064 jittered squares: 3.0–3.1 s against 3.5–3.9 s (paired runs).

    Its pairs are those of the second layer's tree query by the first's features (`intersects`); a pair's
    GeometryCollection keeps its polygons, merged, as geopandas keeps them (`keep_geom_type`), or stays whole.
    """
    pairs = right.sindex.query(left.geometry, predicate="intersects", sort=True)
    a, b = left.geometry.values.to_numpy(), right.geometry.values.to_numpy()
    geometry = shapely.intersection(a[pairs[0]], b[pairs[1]])
    polygons = np.flatnonzero(np.isin(shapely.get_type_id(geometry), _POLYGONS))
    invalid = polygons[~shapely.is_valid(geometry[polygons])]
    geometry[invalid] = shapely.make_valid(geometry[invalid])
    if keep_geom_type:
        collections = np.flatnonzero(shapely.get_type_id(geometry) == shapely.GeometryType.GEOMETRYCOLLECTION)
        geometry[collections] = [_polygons_of(g) for g in geometry[collections]]
        kept = np.isin(shapely.get_type_id(geometry), _POLYGONS)
        pairs, geometry = pairs[:, kept], geometry[kept]
    attributes = [
        frame.drop(columns=frame.geometry.name).iloc[rows].reset_index(drop=True)
        for frame, rows in ((left, pairs[0]), (right, pairs[1]))
    ]
    return gpd.GeoDataFrame(pd.concat(attributes, axis=1), geometry=geometry, crs=left.crs)


def _polygons_of(collection: shapely.Geometry) -> shapely.Geometry:
    """The polygons of a GeometryCollection merged (as geopandas's overlay dissolves them), or an empty one."""
    parts = shapely.get_parts(collection)
    return shapely.union_all(parts[np.isin(shapely.get_type_id(parts), _POLYGONS)])


def ordered(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Overlay features in their sources' order (`order_keys`)."""
    return frame.iloc[np.lexsort(order_keys(frame)[::-1])].reset_index(drop=True)


def order_keys(frame: gpd.GeoDataFrame) -> list[np.ndarray]:
    """The keys of the overlay order, most significant first: pairs by (`FID1`, `FID2`), then first-layer
    features, then second-layer ones."""
    one, two = (frame[c].to_numpy(dtype=float) if c in frame else np.full(len(frame), np.nan) for c in (FID1, FID2))
    has_one, has_two = ~np.isnan(one), ~np.isnan(two)
    kind = np.where(has_one & has_two, 0, np.where(has_one, 1, 2)).astype(float)
    return [kind, np.where(has_one, one, two), np.where(has_two & has_one, two, 0.0)]


def without_ids(frame: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """The result's own fields: the source ids dropped, the geometry column last."""
    rest = [c for c in frame.columns if c not in (FID1, FID2, GEOMETRY)]  # a difference has no FID2
    return frame[[*rest, GEOMETRY]]


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
