"""Distances in metres on any CRS: a geographic layer's geometries are worked on in azimuthal equidistant
projections centred near each of them, a projected layer's in its own unit scaled to metres."""

import numpy as np
import shapely
from pyproj import CRS, Transformer
from pyproj.crs import ProjectedCRS
from pyproj.crs.coordinate_operation import AzimuthalEquidistantConversion

from workers.gdal.vector_io import GeometryOp

CELL_DEGREES = 1.0
"""Projection centres are the nodes of a grid this fine: a geometry lies within half a cell of its centre (plus its
own extent), where the projection's distances are true to a few parts in 10⁵."""


def metres_per_unit(crs: CRS) -> float:
    """How many metres one unit of `crs`'s first axis is (1 for a metric CRS, 0.3048 for feet)."""
    return float(crs.axis_info[0].unit_conversion_factor)


def _through(transformer: Transformer, near_lon: float | None = None) -> GeometryOp:
    """Geometries through `transformer`; with `near_lon`, longitudes out of it are taken within 180° of it, so a
    geometry across the antimeridian stays in one piece (longitudes beyond ±180 rather than a ring round the
    globe)."""

    def coords(xy: np.ndarray) -> np.ndarray:
        out = np.column_stack(transformer.transform(*xy.T))
        if near_lon is not None:
            out[:, 0] = near_lon + (out[:, 0] - near_lon + 180.0) % 360.0 - 180.0
        return out

    return lambda geometry: shapely.transform(geometry, coords, include_z=None)


def local(crs: CRS, lon: float, lat: float) -> tuple[GeometryOp, GeometryOp]:
    """Into and out of the azimuthal equidistant projection centred on (`lon`, `lat`) on `crs`'s datum."""
    conversion = AzimuthalEquidistantConversion(latitude_natural_origin=lat, longitude_natural_origin=lon)
    local = ProjectedCRS(conversion=conversion, geodetic_crs=crs.geodetic_crs)
    into = Transformer.from_crs(crs, local, always_xy=True)
    back = Transformer.from_crs(local, crs, always_xy=True)
    return _through(into), _through(back, lon)


def in_metres(crs: CRS, op: GeometryOp) -> GeometryOp:
    """`op`, which works in metres, applied to the geometries of a layer in geographic `crs`: each geometry in the
    azimuthal equidistant projection centred on the grid node nearest its bounding box's centre, the result
    brought back into `crs`. Missing and empty geometries are passed through `op` as they are."""
    projections: dict[tuple[float, float], tuple[GeometryOp, GeometryOp]] = {}

    def apply(geometry: np.ndarray) -> np.ndarray:
        out = np.full(len(geometry), None, dtype=object)
        absent = shapely.is_missing(geometry) | shapely.is_empty(geometry)
        out[absent] = op(geometry[absent])
        present = np.flatnonzero(~absent)
        if not len(present):
            return out
        box = shapely.bounds(geometry[present])
        lon = np.round((box[:, 0] + box[:, 2]) / 2 / CELL_DEGREES) * CELL_DEGREES
        lat = np.clip(np.round((box[:, 1] + box[:, 3]) / 2 / CELL_DEGREES) * CELL_DEGREES, -90, 90)
        centres, group = np.unique(np.c_[lon, lat], axis=0, return_inverse=True)
        for k, (x, y) in enumerate(centres.tolist()):
            if (x, y) not in projections:
                projections[(x, y)] = local(crs, x, y)
            into, back = projections[(x, y)]
            chosen = present[group.ravel() == k]
            out[chosen] = back(op(into(geometry[chosen])))
        return out

    return apply
