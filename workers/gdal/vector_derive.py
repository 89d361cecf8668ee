"""Jobs that derive geometries from a layer's (vector_geometry) and measure them on the ellipsoid (vector_measure)."""

from dataclasses import replace

import numpy as np
import shapely
from pyproj import CRS, Geod, Transformer

from schemas.tools.vector import VectorGeometryArgs, VectorGeometryResult, VectorMeasureArgs, VectorMeasureResult
from workers.gdal.vector_io import GeometryOp, layer_info, layer_name, no_geometry, of_dimension, read_layer
from workers.gdal.vector_ops import paths, written
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed

MEASURES = ("area_m2", "length_m", "perimeter_m")


def _derive_op(operation: str, repaired: list[int]) -> GeometryOp:
    """The geometries `operation` makes of each one; make_valid counts the invalid ones into `repaired`."""

    def derive(geometry: np.ndarray) -> np.ndarray:
        if operation == "centroid":
            return shapely.centroid(geometry)
        if operation == "representative_point":
            return shapely.point_on_surface(geometry)
        if operation == "convex_hull":
            return shapely.convex_hull(geometry)
        if operation == "envelope":
            return shapely.envelope(geometry)
        out = geometry.copy()
        invalid = np.flatnonzero(~shapely.is_valid(geometry) & ~shapely.is_missing(geometry))
        out[invalid] = of_dimension(shapely.make_valid(geometry[invalid]), shapely.get_dimensions(geometry[invalid]))
        repaired[0] += len(invalid)
        return out

    return derive


def vector_geometry(args: VectorGeometryArgs, ctx: JobContext) -> VectorGeometryResult:
    """Replace every geometry by the one `args.operation` derives from it, attributes kept.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable source,
            an unknown layer or driver, or a GDAL write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src, dst, driver = paths(args, ctx)
    repaired = [0]
    layer = read_layer(src, args.layer, ctx, _derive_op(args.operation, repaired))
    _, described = written(layer, dst, driver, ctx, None)
    return VectorGeometryResult(operation=args.operation, repaired=repaired[0], **described)


def _to_geographic(crs: CRS) -> tuple[Geod, GeometryOp]:
    """The ellipsoid of `crs` and the transform of its coordinates into longitude/latitude on it."""
    transformer = Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True)

    def coords(xy: np.ndarray) -> np.ndarray:
        return np.column_stack(transformer.transform(xy[:, 0], xy[:, 1]))

    return crs.get_geod(), lambda geometry: shapely.transform(geometry, coords)


def _ring(geod: Geod, ring: shapely.LinearRing) -> tuple[float, float]:
    lon, lat = shapely.get_coordinates(ring).T
    area, perimeter = geod.polygon_area_perimeter(lon, lat)
    return abs(area), perimeter


def _measured(geod: Geod, geometry: shapely.Geometry | None) -> tuple[float, float, float]:
    """Area (m²), length (m) and perimeter (m) of one longitude/latitude geometry on `geod`."""
    area = length = perimeter = 0.0
    for part in shapely.get_parts(geometry).tolist() if geometry is not None else []:
        if isinstance(part, shapely.Polygon):
            rings = [_ring(geod, part.exterior), *(_ring(geod, hole) for hole in part.interiors)]
            area += rings[0][0] - sum(hole[0] for hole in rings[1:])
            perimeter += sum(ring[1] for ring in rings)
        elif isinstance(part, shapely.LineString):
            length += geod.line_length(*shapely.get_coordinates(part).T)
        elif shapely.get_type_id(part) >= 4:  # a collection's Multi members
            area, length, perimeter = np.add((area, length, perimeter), _measured(geod, part)).tolist()
    return area, length, perimeter


def vector_measure(args: VectorMeasureArgs, ctx: JobContext) -> VectorMeasureResult:
    """Write the layer with each feature's geodesic area, length and perimeter on its CRS's ellipsoid.

    Raises:
        JobFailed: as `vector_geometry`, plus `crs.missing` for a layer without a CRS, `layer.no_geometry` for a
            table.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    src, dst, driver = paths(args, ctx)
    name = layer_name(src, args.layer)
    info = layer_info(src, name, count=False)
    if info["geometry_type"] is None:
        raise no_geometry(name)
    if info["crs"] is None:
        raise JobFailed("crs.missing", "uri: the layer has no CRS, so it has no ellipsoid to measure on", field="uri")
    geod, geographic = _to_geographic(CRS(info["crs"]))
    layer = read_layer(src, name, ctx)
    kept, _ = layer.with_geometry()
    measures = np.array([_measured(geod, g) for g in geographic(kept.geometry).tolist()]).reshape(-1, 3)
    fields, columns = list(layer.fields), list(layer.columns)
    for name, values in zip(MEASURES, measures.T, strict=True):
        full = np.zeros(len(layer.geometry))
        full[~(shapely.is_missing(layer.geometry) | shapely.is_empty(layer.geometry))] = values
        if name in fields:
            columns[fields.index(name)] = full
        else:
            fields.append(name)
            columns.append(full)
    _, described = written(replace(layer, fields=fields, columns=columns), dst, driver, ctx, None)
    totals = {"total_area_m2": float(measures[:, 0].sum()), "total_length_m": float(measures[:, 1].sum())}
    return VectorMeasureResult(fields_added=list(MEASURES), **totals, **described)
