"""Jobs that rewrite a vector layer: vector_convert, vector_reproject, vector_clip, vector_buffer, vector_simplify."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import shapely
from pyproj import CRS
from pyproj.exceptions import ProjError

from schemas.tools.base import Reprojection
from schemas.tools.vector import (
    VectorBufferArgs,
    VectorBufferResult,
    VectorClipArgs,
    VectorClipResult,
    VectorConvertArgs,
    VectorConvertResult,
    VectorReprojectArgs,
    VectorReprojectResult,
    VectorSimplifyArgs,
    VectorSimplifyResult,
    VectorWriteArgs,
)
from workers.gdal import vector_metric, visvalingam
from workers.gdal.errors import parse_crs, transformer_between
from workers.gdal.outputs import file_ref
from workers.gdal.vector_io import (
    GeometryOp,
    Layer,
    geometry_type,
    layer_info,
    layer_name,
    of_dimension,
    output_driver,
    read_layer,
    write_layer,
)
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import output_path, resolve_in_workspace

_WKT_TYPES = ("POINT", "LINESTRING", "POLYGON", "MULTI", "GEOMETRYCOLLECTION")


def paths(args: VectorWriteArgs, ctx: JobContext) -> tuple[Path, Path, str]:
    """The source, the output (checked: inside the workspace, not there unless `overwrite`) and its driver."""
    src = resolve_in_workspace(args.uri, ctx.roots)
    dst = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    return src, dst, output_driver(args.driver, dst)


def _described(layer: Layer, dst: Path, driver: str, crs: str | None) -> dict:
    """The fields every vector result shares."""
    present = layer.geometry[~shapely.is_missing(layer.geometry)]
    bounds = shapely.total_bounds(present).tolist() if len(present) else []
    return {
        "output": file_ref(dst, driver),
        "feature_count": len(layer.geometry),
        "geometry_type": geometry_type(layer.geometry) if len(present) else None,
        "bounds": bounds if bounds and not any(math.isnan(b) for b in bounds) else None,
        "crs": crs,
    }


def written(
    layer: Layer, dst: Path, driver: str, ctx: JobContext, crs: str | None, encoding: str | None = None
) -> tuple[Layer, dict]:
    """Write the features of `layer` that have a geometry (the vector tools' one rule: none is written without
    one, and they are counted) and describe what was written, with `crs` as the result names it."""
    kept, dropped = layer.with_geometry()
    renamed = write_layer(kept, dst, driver, layer.crs, encoding, ctx.fence)
    described = _described(kept, dst, driver, crs or layer.crs)
    return kept, {**described, "empty_dropped": dropped, "renamed_fields": renamed}


def _rewrite(args: VectorWriteArgs, ctx: JobContext, op: GeometryOp | None = None) -> tuple[Layer, dict]:
    src, dst, driver = paths(args, ctx)
    layer = read_layer(src, args.layer, ctx, op)
    return layer, written(layer, dst, driver, ctx, None, getattr(args, "encoding", None))[1]


def vector_convert(args: VectorConvertArgs, ctx: JobContext) -> VectorConvertResult:
    """Copy one layer of `args.uri` into the format of `args.output` (or `args.driver`).

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable source,
            an unknown layer or driver, or a GDAL write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    layer, described = _rewrite(args, ctx)
    driver = described["output"].driver
    encoding = args.encoding if driver == "ESRI Shapefile" else "UTF-8"
    return VectorConvertResult(src_driver=layer.driver, dst_driver=driver, encoding=encoding, **described)


def _layer_crs(path: Path, layer: str | None, override: str | None) -> CRS:
    if override is not None:
        return parse_crs(override, "src_crs")
    crs = layer_info(path, layer_name(path, layer), count=False)["crs"]
    if crs is None:
        raise JobFailed("crs.missing", "src_crs: the layer has no CRS; pass src_crs to say what it is", field="src_crs")
    return CRS.from_user_input(crs)


def _transformer_op(src: CRS, dst: CRS) -> GeometryOp:
    transformer = transformer_between(src, dst, "dst_crs")

    def coords(xy: np.ndarray) -> np.ndarray:
        try:
            return np.column_stack(transformer.transform(*xy.T, errcheck=True))
        except ProjError as exc:
            raise JobFailed("crs.transform_failed", f"dst_crs: PROJ cannot transform these coordinates: {exc}") from exc

    return lambda geometry: shapely.transform(geometry, coords, include_z=None)


def vector_reproject(args: VectorReprojectArgs, ctx: JobContext) -> VectorReprojectResult:
    """Transform a layer's coordinates into `args.dst_crs` with PROJ, chunk by chunk.

    Raises:
        JobFailed: as `vector_convert`, plus an unknown, missing or untransformable CRS, and `layer.no_geometry`
            for a table without a geometry column.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src, dst, driver = paths(args, ctx)
    src_crs, dst_crs = _layer_crs(src, args.layer, args.src_crs), parse_crs(args.dst_crs, "dst_crs")
    layer = read_layer(src, args.layer, ctx, _transformer_op(src_crs, dst_crs))
    _, described = written(replace(layer, crs=dst_crs.to_wkt()), dst, driver, ctx, args.dst_crs)
    return VectorReprojectResult(src_crs=src_crs.to_string(), dst_crs=args.dst_crs, **described)


def _parsed_mask(text: str) -> shapely.Geometry | None:
    """The geometry `text` spells as GeoJSON or WKT, or None when it looks like a path."""
    stripped = text.lstrip()
    try:
        if stripped.startswith("{"):
            return shapely.from_geojson(stripped)
        if stripped.upper().startswith(_WKT_TYPES):
            return shapely.from_wkt(stripped)
    except shapely.errors.ShapelyError as exc:
        raise JobFailed("mask.invalid", f"mask: not a valid geometry: {exc}", field="mask") from exc
    return None


def _mask_from_file(uri: str, layer_crs: str | None, ctx: JobContext) -> tuple[shapely.Geometry, list[Reprojection]]:
    path = resolve_in_workspace(uri, ctx.roots, field="mask")
    mask = read_layer(path, None, JobContext(ctx.call_id, ctx.roots), field="mask")  # silent: not the job's progress
    if not (mask.crs and layer_crs and CRS(mask.crs) != CRS(layer_crs)):
        return shapely.union_all(mask.geometry), []
    mask = replace(mask, geometry=_transformer_op(CRS(mask.crs), CRS(layer_crs))(mask.geometry))
    return shapely.union_all(mask.geometry), [Reprojection(input="mask", from_crs=mask.crs, to_crs=layer_crs)]


def _mask(args: VectorClipArgs, layer_crs: str | None, ctx: JobContext) -> tuple[shapely.Geometry, list[Reprojection]]:
    """The clip polygon in the layer's CRS (the bounds box, an inline WKT/GeoJSON geometry, or a mask file), and
    the mask file's reprojection into the layer's CRS when it had one.

    Raises:
        JobFailed: `mask.invalid` when the mask is not a polygon, or the mask file's read errors.
    """
    if args.bounds is not None:
        return shapely.box(*args.bounds), []
    text, reprojected = args.mask or "", []
    geometry = _parsed_mask(text)
    if geometry is None:
        geometry, reprojected = _mask_from_file(text, layer_crs, ctx)
    if shapely.get_dimensions(geometry) != 2:
        raise JobFailed("mask.invalid", "mask: must be a polygon or multipolygon", field="mask")
    return geometry, reprojected


def _clip_op(mask: shapely.Geometry, source_empty: list[int]) -> GeometryOp:
    """Each geometry cut to `mask` and kept to its own dimension (None when nothing of it is left), counting the
    source geometries that were missing or empty into `source_empty`."""
    shapely.prepare(mask)

    def clip(geometry: np.ndarray) -> np.ndarray:
        out = np.full(len(geometry), None, dtype=object)
        source_empty[0] += int((shapely.is_missing(geometry) | shapely.is_empty(geometry)).sum())
        hit = np.flatnonzero(shapely.intersects(mask, geometry))
        cut = shapely.intersection(geometry[hit], mask)
        out[hit] = of_dimension(cut, shapely.get_dimensions(geometry[hit]))  # no stray edges, touches or points
        return out

    return clip


def vector_clip(args: VectorClipArgs, ctx: JobContext) -> VectorClipResult:
    """Keep the features that intersect `args.bounds` or `args.mask`, cut to it: of each cut, only the parts of the
    feature's own dimension (a polygon's shared edges and corners are not kept).

    Raises:
        JobFailed: as `vector_convert`, plus an unreadable or non-polygonal mask, and `layer.no_geometry` for a
            table without a geometry column.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src, dst, driver = paths(args, ctx)
    crs = layer_info(src, layer_name(src, args.layer), count=False)["crs"]
    mask, reprojected = _mask(args, crs, ctx)
    source_empty = [0]
    layer = read_layer(src, args.layer, ctx, _clip_op(mask, source_empty))
    described = {**written(layer, dst, driver, ctx, None)[1], "empty_dropped": source_empty[0]}  # not the misses
    method = "bbox" if args.bounds is not None else "mask"
    return VectorClipResult(
        clip_method=method, source_feature_count=len(layer.geometry), reprojected=reprojected, **described
    )


def _buffer_op(args: VectorBufferArgs, distance: float) -> GeometryOp:
    style = {"cap_style": args.cap_style, "join_style": args.join_style, "mitre_limit": args.mitre_limit}
    return lambda geometry: shapely.buffer(geometry, distance, quad_segs=args.resolution, **style)


def _buffer_units(args: VectorBufferArgs, crs: CRS | None) -> tuple[GeometryOp, str, list[str]]:
    """The buffer to apply in `crs`, the unit its distance was taken in, and what the caller should know."""
    if crs is None:
        return _buffer_op(args, args.distance), "crs", ["the layer has no CRS: the distance is in its own units"]
    if args.units == "crs":
        unit = crs.axis_info[0].unit_name
        said = [f"the CRS is geographic: the distance {args.distance} is in {unit}"] if crs.is_geographic else []
        return _buffer_op(args, args.distance), unit, said
    if crs.is_geographic:
        return vector_metric.in_metres(crs, _buffer_op(args, args.distance)), "metres", []
    return _buffer_op(args, args.distance / vector_metric.metres_per_unit(crs)), "metres", []


def vector_buffer(args: VectorBufferArgs, ctx: JobContext) -> VectorBufferResult:
    """Buffer every geometry by `args.distance` in `args.units` with the caps and joins asked for, then dissolve
    the buffers into one feature when asked.

    Raises:
        JobFailed: as `vector_convert`, plus `layer.no_geometry` for a table without a geometry column.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src, dst, driver = paths(args, ctx)
    crs_text = layer_info(src, layer_name(src, args.layer), count=False)["crs"]
    op, units, warnings = _buffer_units(args, CRS(crs_text) if crs_text else None)
    layer = read_layer(src, args.layer, ctx, op)
    dropped = layer.with_geometry()[1]
    if args.dissolve:
        merged = shapely.union_all(layer.geometry[~shapely.is_missing(layer.geometry)])
        layer = replace(layer, fields=[], columns=[], geometry=np.array([merged], dtype=object))
    described = {**written(layer, dst, driver, ctx, None)[1], "empty_dropped": dropped}  # the features, not the union
    settings = {"buffer_distance": args.distance, "units": units, "resolution": args.resolution}
    return VectorBufferResult(**settings, dissolved=args.dissolve, warnings=warnings, **described)


def _simplify_op(args: VectorSimplifyArgs, counts: list[int]) -> GeometryOp:
    """Simplify, then snap to the grid (GEOS needs valid input for that: invalid geometries are made valid first);
    `counts` gathers vertices before, after, and geometries repaired."""

    def simplify(geometry: np.ndarray) -> np.ndarray:
        out = geometry
        if args.tolerance and args.method == "visvalingam":
            out = visvalingam.simplify(geometry, args.tolerance, args.preserve_topology)
        elif args.tolerance:
            out = shapely.simplify(geometry, args.tolerance, preserve_topology=args.preserve_topology)
        if args.grid_size is not None:
            invalid = np.flatnonzero(~shapely.is_valid(out) & ~shapely.is_missing(out))
            out = out.copy()
            out[invalid] = of_dimension(shapely.make_valid(out[invalid]), shapely.get_dimensions(out[invalid]))
            counts[2] += len(invalid)
            out = shapely.set_precision(out, args.grid_size)
        counts[0] += int(shapely.get_num_coordinates(geometry).sum())
        counts[1] += int(shapely.get_num_coordinates(out).sum())
        return out

    return simplify


def vector_simplify(args: VectorSimplifyArgs, ctx: JobContext) -> VectorSimplifyResult:
    """Reduce vertex counts with Douglas–Peucker (GEOS) or Visvalingam–Whyatt, then snap to `args.grid_size`.

    Raises:
        JobFailed: as `vector_convert`, plus `layer.no_geometry` for a table without a geometry column.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    counts = [0, 0, 0]
    _, described = _rewrite(args, ctx, _simplify_op(args, counts))
    settings = {"tolerance": args.tolerance, "method": args.method, "preserve_topology": args.preserve_topology}
    return VectorSimplifyResult(
        vertices_before=counts[0],
        vertices_after=counts[1],
        grid_size=args.grid_size,
        repaired=counts[2],
        **settings,
        **described,
    )
