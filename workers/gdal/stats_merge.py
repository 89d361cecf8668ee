"""Exact statistics from parts: counts, extremes and moments merged (Chan et al.'s parallel moments), order
statistics selected across the tiles' sorted values, histograms counted against the same edges NumPy uses.

What `workers.gdal.stats.band_stats` computes over all valid values at once, computed here from per-tile pieces, so
the tiled result equals the whole one: counts, min, max and histogram counts exactly, mean and std to rounding
(sums in another order), percentiles exactly when NumPy's own interpolation is reproduced (it is: `_lerp` below).
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Moments:
    """Count, mean and the sum of squared deviations from it (M2) of a set of values."""

    count: int
    mean: float
    m2: float

    @classmethod
    def of(cls, values: np.ndarray) -> "Moments":
        if values.size == 0:
            return cls(0, 0.0, 0.0)
        wide = values.astype(np.float64)
        mean = float(wide.mean())
        return cls(int(values.size), mean, float(((wide - mean) ** 2).sum()))

    def merge(self, other: "Moments") -> "Moments":
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / count
        return Moments(count, mean, self.m2 + other.m2 + delta * delta * self.count * other.count / count)

    @property
    def std(self) -> float:
        return float(np.sqrt(self.m2 / self.count)) if self.count else 0.0


def kth(parts: list[np.ndarray], k: int) -> float:
    """The `k`th smallest (0-based) of the union of sorted arrays `parts`, without merging them.

    Each round takes the count-weighted median of the live ranges' middles as a pivot and drops, in every part,
    the side the answer is not on: a constant share of what is left each round, one binary search per part.
    """
    lo, hi = [0] * len(parts), [len(p) for p in parts]
    while True:
        live = [i for i in range(len(parts)) if lo[i] < hi[i]]
        pivot = _weighted_median([(parts[i][(lo[i] + hi[i]) // 2], hi[i] - lo[i]) for i in live])
        below = [int(np.searchsorted(p, pivot, "left")) for p in parts]
        upto = [int(np.searchsorted(p, pivot, "right")) for p in parts]
        if sum(below) <= k < sum(upto):
            return float(pivot)
        if k < sum(below):
            hi = [min(h, b) for h, b in zip(hi, below, strict=True)]
        else:
            lo = [max(low, u) for low, u in zip(lo, upto, strict=True)]


def _weighted_median(items: list[tuple[object, int]]) -> object:
    items = sorted(items, key=lambda item: item[0])  # type: ignore[arg-type, return-value]
    half, seen = sum(w for _, w in items) / 2, 0
    for value, weight in items:
        seen += weight
        if seen >= half:
            return value
    return items[-1][0]


def percentiles(parts: list[np.ndarray], count: int, qs: list[float]) -> list[float]:
    """`np.percentile(all values as float64, qs)` (method "linear") from sorted parts."""
    quantiles = np.true_divide(np.asarray(qs, dtype=np.float64), 100)
    virtual = count * quantiles + (1 + quantiles * (1 - 1 - 1)) - 1  # NumPy's _compute_virtual_index, alpha=beta=1
    previous = np.floor(virtual)
    gamma = virtual - previous
    cache: dict[int, float] = {}

    def at(index: int) -> float:
        index = min(max(index, 0), count - 1)
        if index not in cache:
            cache[index] = kth(parts, index)
        return cache[index]

    out = []
    for prev, g in zip(previous.astype(np.int64), gamma, strict=True):
        out.append(float(_lerp(np.float64(at(int(prev))), np.float64(at(int(prev) + 1)), np.float64(g))))
    return out


def _lerp(a: np.float64, b: np.float64, t: np.float64) -> np.float64:
    """NumPy's `_lerp`: from `a` for t < 0.5, from `b` otherwise (monotonic, exact at both ends)."""
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def histogram(parts: list[np.ndarray], low: float, high: float, bins: int) -> tuple[list[int], np.ndarray]:
    """`np.histogram(all values as float64, bins)`: counts and edges (value v is in bin i when edge i ≤ v < edge
    i+1; the last bin also holds the top edge)."""
    if low == high:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, bins + 1, endpoint=True, dtype=np.float64)
    below = np.zeros(bins + 1, dtype=np.int64)
    for part in parts:
        below += np.searchsorted(part, _thresholds(edges, part.dtype), "left")
    total = sum(len(p) for p in parts)
    counts = np.diff(below)
    counts[-1] += total - below[-1]  # the top edge belongs to the last bin
    return [int(c) for c in counts], edges


def _thresholds(edges: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """For each float64 edge e, the smallest value t of `dtype` with (v < e) ⇔ (v < t) for every v of `dtype`."""
    if dtype.kind == "f":
        cast = edges.astype(dtype)
        return np.where(cast.astype(np.float64) < edges, np.nextafter(cast, np.inf, dtype=dtype), cast)
    info = np.iinfo(dtype)
    return np.clip(np.ceil(edges), info.min, info.max).astype(dtype)
