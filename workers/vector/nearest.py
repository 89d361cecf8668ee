"""The k nearest features of one layer to each feature of another, within an optional distance, in metres
(`workers.vector.metric`)."""

import numpy as np
import shapely

from workers.vector.metric import Measure, Scale, extent_metres

Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Index into the first layer, index into the second, distance: sorted by first index, distance, second index."""


def nearest_pairs(
    left: np.ndarray, right: np.ndarray, k: int, max_distance: float | None, measure: Measure | None = None
) -> Pairs:
    """For each geometry of `left`, the `k` nearest of `right` (ties at the k-th broken by their index in `right`),
    none farther than `max_distance`; distances as `measure` takes them (CRS units by default). Missing or empty
    geometries have no neighbours and are nobody's.

    The search radius of each feature starts at the distance of the feature nearest it in CRS units (a feature that
    near exists) and doubles until it holds `k` neighbours, all of `right`, or reaches `max_distance`: every geometry
    within the radius is a candidate, so the k nearest are among them.
    """
    measure = measure or Scale()
    tree = shapely.STRtree(right)
    present = int((~shapely.is_missing(right) & ~shapely.is_empty(right)).sum())
    if present == 0 or len(left) == 0:
        empty = np.empty(0, dtype=np.intp)
        return empty, empty, np.empty(0)
    todo, near = tree.query_nearest(left, all_matches=False)
    radius = measure.distances(left[todo], right[near])
    if max_distance is not None:
        radius = np.minimum(radius, max_distance)
    step = extent_metres(tuple(shapely.total_bounds(right)), measure) / np.sqrt(present) or 1.0
    want = min(k, present)
    found: list[Pairs] = []
    while len(todo):
        pl, pr, dist = measure.within(tree, left[todo], right, radius)
        done = np.bincount(pl, minlength=len(todo)) >= want
        if max_distance is not None:
            done |= radius >= max_distance
        keep = done[pl]
        found.append((todo[pl[keep]], pr[keep], dist[keep]))
        todo, radius = todo[~done], np.maximum(radius[~done] * 2, step)
        if max_distance is not None:
            radius = np.minimum(radius, max_distance)
    li, ri, dist = (np.concatenate(parts) for parts in zip(*found, strict=True))
    order = np.lexsort((ri, dist, li))
    li, ri, dist = li[order], ri[order], dist[order]
    rank = np.arange(len(li)) - np.searchsorted(li, li, side="left")
    take = rank < k
    return li[take], ri[take], dist[take]
