"""The k nearest features of one layer to each feature of another, within an optional distance."""

import numpy as np
import shapely

Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Index into the first layer, index into the second, distance: sorted by first index, distance, second index."""


def nearest_pairs(left: np.ndarray, right: np.ndarray, k: int, max_distance: float | None) -> Pairs:
    """For each geometry of `left`, the `k` nearest of `right` (ties at the k-th broken by their index in `right`),
    none farther than `max_distance`. Missing or empty geometries have no neighbours and are nobody's.

    The search radius of each feature starts at its nearest neighbour's distance and doubles until it holds `k`
    neighbours, all of `right`, or reaches `max_distance`: every geometry within the radius is a candidate, so the
    k nearest are among them.
    """
    tree = shapely.STRtree(right)
    present = int((~shapely.is_missing(right) & ~shapely.is_empty(right)).sum())
    if present == 0 or len(left) == 0:
        empty = np.empty(0, dtype=np.intp)
        return empty, empty, np.empty(0)
    (first, _), radius = tree.query_nearest(left, max_distance=max_distance, return_distance=True, all_matches=False)
    width, height = np.ptp(shapely.total_bounds(right).reshape(2, 2), axis=0)
    step = max(width, height) / np.sqrt(present) or 1.0
    want = min(k, present)
    found_l, found_r = [np.empty(0, dtype=np.intp)], [np.empty(0, dtype=np.intp)]
    todo, radius = first, np.asarray(radius, dtype=float)
    while len(todo):
        pl, pr = tree.query(left[todo], predicate="dwithin", distance=radius)
        counts = np.bincount(pl, minlength=len(todo))
        done = counts >= want
        if max_distance is not None:
            done |= radius >= max_distance
        keep = done[pl]
        found_l.append(todo[pl[keep]])
        found_r.append(pr[keep])
        todo, radius = todo[~done], np.maximum(radius[~done] * 2, step)
        if max_distance is not None:
            radius = np.minimum(radius, max_distance)
    li, ri = np.concatenate(found_l), np.concatenate(found_r)
    dist = shapely.distance(left[li], right[ri])
    if max_distance is not None:
        near = dist <= max_distance
        li, ri, dist = li[near], ri[near], dist[near]
    order = np.lexsort((ri, dist, li))
    li, ri, dist = li[order], ri[order], dist[order]
    rank = np.arange(len(li)) - np.searchsorted(li, li, side="left")
    take = rank < k
    return li[take], ri[take], dist[take]
