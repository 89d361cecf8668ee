"""Visvalingam–Whyatt line simplification (shapely has only Douglas–Peucker): drop the smallest triangles first."""

import heapq

import numpy as np
import shapely
from shapely.geometry.base import BaseGeometry


def _triangle(xy: np.ndarray, a: int, b: int, c: int) -> float:
    (ax, ay), (bx, by), (cx, cy) = xy[a, :2], xy[b, :2], xy[c, :2]
    return abs((bx - ax) * (cy - ay) - (cx - ax) * (by - ay)) / 2.0


def keep_mask(xy: np.ndarray, min_area: float, min_points: int) -> np.ndarray:
    """Which vertices of the path `xy` survive: interior vertices whose effective area is below `min_area` go,
    smallest first, while more than `min_points` remain. The end points always stay."""
    n = len(xy)
    keep = np.ones(n, dtype=bool)
    prev, nxt = list(range(-1, n - 1)), list(range(1, n + 1))
    area = {i: _triangle(xy, i - 1, i, i + 1) for i in range(1, n - 1)}
    heap = [(a, i) for i, a in area.items()]
    heapq.heapify(heap)
    remaining = n
    while heap and remaining > min_points:
        a, i = heapq.heappop(heap)
        if not keep[i] or a != area[i]:
            continue  # a stale entry: the vertex went, or its area grew since
        if a >= min_area:
            break
        keep[i], remaining = False, remaining - 1
        p, q = prev[i], nxt[i]
        nxt[p], prev[q] = q, p
        for j in (p, q):
            if 0 < j < n - 1:
                area[j] = max(_triangle(xy, prev[j], j, nxt[j]), a)  # effective area never shrinks
                heapq.heappush(heap, (area[j], j))
    return keep


def _path(coords: np.ndarray, min_area: float, min_points: int) -> np.ndarray:
    return coords[keep_mask(coords, min_area, min_points)] if len(coords) > min_points else coords


def simplify_geometry(geom: BaseGeometry | None, tolerance: float) -> BaseGeometry | None:
    """`geom` with each line and ring simplified; triangles under `tolerance`² are removed."""
    if geom is None or geom.is_empty:
        return geom
    min_area = tolerance * tolerance
    if isinstance(geom, shapely.LineString):
        return shapely.LineString(_path(np.asarray(geom.coords), min_area, 2))
    if isinstance(geom, shapely.Polygon):
        shell = _path(np.asarray(geom.exterior.coords), min_area, 4)
        return shapely.Polygon(shell, [_path(np.asarray(r.coords), min_area, 4) for r in geom.interiors])
    if isinstance(geom, shapely.MultiLineString | shapely.MultiPolygon | shapely.GeometryCollection):
        return type(geom)([simplify_geometry(part, tolerance) for part in geom.geoms])
    return geom  # points have nothing to simplify


def simplify(geometry: np.ndarray, tolerance: float, preserve_topology: bool) -> np.ndarray:
    """Visvalingam–Whyatt over an array of geometries.

    With `preserve_topology`, a result that came out invalid (a ring crossing itself) is replaced by GEOS's
    topology-preserving simplification of the original, so every output geometry is valid.
    """
    out = np.array([simplify_geometry(g, tolerance) for g in geometry], dtype=object)
    if preserve_topology and len(out):
        bad = ~shapely.is_valid(out) & ~shapely.is_missing(out)
        out[bad] = shapely.simplify(geometry[bad], tolerance, preserve_topology=True)
    return out
