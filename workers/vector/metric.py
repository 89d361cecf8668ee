"""Distances in metres between the features of two layers, for `vector_join`'s `dwithin` and nearest modes.

On a projected CRS a distance in metres is one in the CRS's unit scaled (`Scale`). On a geographic CRS (`Geodesic`)
the candidates of a feature are found in degrees, inside a box that holds every point within the distance of it, and
measured in metres: point to point on the ellipsoid (pyproj's `Geod`, exact), anything else in the azimuthal
equidistant projection centred on the whole degree nearest the first feature (`workers.gdal.vector_metric`), true to
a few parts in 10⁵. Longitudes do not wrap: features across the antimeridian from each other are not near.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import shapely
from pyproj import CRS, Geod

from workers.gdal.vector_metric import CELL_DEGREES, local, metres_per_unit

LAT_METRES = 110_574.0 * 0.99
"""Fewest metres in a degree of latitude (at the equator), less 1%: degrees = metres / this is never too few."""
LON_METRES = 111_319.0 * 0.99
"""Fewest metres in a degree of longitude at the equator (the ellipsoid's is more), less 1%; times cos(latitude)."""


class Measure:
    """Distances of `within` between two layers in one CRS; metres given, metres returned."""

    def within(
        self, tree: shapely.STRtree, left: np.ndarray, right: np.ndarray, metres: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs (index into `left`, index into `right`, distance in metres) no farther apart than each left
        geometry's `metres`; `tree` is `right`'s."""
        raise NotImplementedError

    def distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Metres between `a[i]` and `b[i]`."""
        raise NotImplementedError

    def margin(self, bounds: np.ndarray, metres: float) -> tuple[np.ndarray, np.ndarray]:
        """How far, in CRS units along x and y, boxes `bounds` (n × 4) must grow to hold every point within
        `metres` of them."""
        raise NotImplementedError


@dataclass(frozen=True)
class Scale(Measure):
    """A projected CRS (or none): distances in its unit, times `factor` metres."""

    factor: float = 1.0

    def within(
        self, tree: shapely.STRtree, left: np.ndarray, right: np.ndarray, metres: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        li, ri = tree.query(left, predicate="dwithin", distance=metres / self.factor)
        return li, ri, self.distances(left[li], right[ri])

    def distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return shapely.distance(a, b) * self.factor

    def margin(self, bounds: np.ndarray, metres: float) -> tuple[np.ndarray, np.ndarray]:
        reach = np.full(len(bounds), metres / self.factor)
        return reach, reach


@dataclass(frozen=True)
class Geodesic(Measure):
    """A geographic CRS: candidates in degrees, distances in metres on its ellipsoid."""

    crs: CRS
    _projections: dict = field(default_factory=dict, compare=False)

    def margin(self, bounds: np.ndarray, metres: float) -> tuple[np.ndarray, np.ndarray]:
        dy = np.full(len(bounds), metres / LAT_METRES)
        far = np.minimum(np.maximum(np.abs(bounds[:, 1]), np.abs(bounds[:, 3])) + dy, 90.0)
        cos = np.cos(np.radians(far))
        dx = np.where(cos > 1e-9, metres / (LON_METRES * np.maximum(cos, 1e-9)), 360.0)
        return np.minimum(dx, 360.0), dy

    def within(
        self, tree: shapely.STRtree, left: np.ndarray, right: np.ndarray, metres: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        bounds = shapely.bounds(left)
        dx, dy = self.margin(bounds, 1.0)
        dx, dy = dx * metres, dy * metres
        boxes = shapely.box(bounds[:, 0] - dx, bounds[:, 1] - dy, bounds[:, 2] + dx, bounds[:, 3] + dy)
        li, ri = tree.query(boxes)
        dist = self.distances(left[li], right[ri])
        near = dist <= metres[li]
        return li[near], ri[near], dist[near]

    def distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.empty(len(a))
        points = (shapely.get_type_id(a) == 0) & (shapely.get_type_id(b) == 0)
        if points.any():
            geod = self._geod()
            _, _, out[points] = geod.inv(shapely.get_x(a[points]), shapely.get_y(a[points]),
                                         shapely.get_x(b[points]), shapely.get_y(b[points]))  # fmt: skip
        rest = np.flatnonzero(~points)
        if len(rest):
            box = shapely.bounds(a[rest])
            lon = np.round((box[:, 0] + box[:, 2]) / 2 / CELL_DEGREES) * CELL_DEGREES
            lat = np.clip(np.round((box[:, 1] + box[:, 3]) / 2 / CELL_DEGREES) * CELL_DEGREES, -90, 90)
            centres, group = np.unique(np.c_[lon, lat], axis=0, return_inverse=True)
            for k, (x, y) in enumerate(centres.tolist()):
                into = self._into(x, y)
                chosen = rest[group.ravel() == k]
                out[chosen] = shapely.distance(into(a[chosen]), into(b[chosen]))
        return out

    def _geod(self) -> Geod:
        if "geod" not in self._projections:
            self._projections["geod"] = self.crs.get_geod() or Geod(ellps="WGS84")
        return self._projections["geod"]

    def _into(self, lon: float, lat: float):  # type: ignore[no-untyped-def]
        if (lon, lat) not in self._projections:
            self._projections[(lon, lat)] = local(self.crs, lon, lat)[0]
        return self._projections[(lon, lat)]


def measure_of(crs: CRS | str | None) -> Measure:
    """How `vector_join` measures metres on a layer in `crs`: geodesic on a geographic CRS, its unit scaled on a
    projected one, CRS units on a layer without one."""
    if crs is None:
        return Scale()
    crs = CRS(crs)
    return Geodesic(crs) if crs.is_geographic else Scale(metres_per_unit(crs))


def extent_metres(bounds: tuple[float, ...], measure: Measure) -> float:
    """About how many metres wide the box `bounds` is (its longer side)."""
    if isinstance(measure, Scale):
        return max(bounds[2] - bounds[0], bounds[3] - bounds[1]) * measure.factor
    mid = math.cos(math.radians(min(abs(bounds[1]), abs(bounds[3]))))
    return max((bounds[2] - bounds[0]) * 111_319.0 * mid, (bounds[3] - bounds[1]) * 110_574.0)
