"""Exact statistics from parts: counts, extremes and moments merged (Chan et al.'s parallel moments), order
statistics found through the tiles' coarse counts, histograms counted against the same edges NumPy uses.

What `workers.gdal.stats.band_stats` computes over all valid values at once, computed here from per-tile pieces, so
the tiled result equals the whole one: counts, min, max, percentiles and histogram counts exactly, mean and std to
rounding (sums in another order). Sorting every tile's values instead cost more than the whole job saved (34 ms per
million float32 values, 8.7 s of CPU for a 16384² band).
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


COARSE_BITS = 16
"""Tiles count their values in 2**16 bins of the values' sortable keys' top bits; the fan-in finds in them which
bin holds each order statistic it needs, and looks at only that bin's values (for 8- and 16-bit data, the bin is
the value)."""


def sortable(values: np.ndarray) -> np.ndarray:
    """Unsigned keys in the values' order (IEEE floats: sign flipped, negatives inverted; ints: offset)."""
    width = values.dtype.itemsize * 8
    unsigned = np.dtype(f"uint{width}")
    if values.dtype.kind == "f":
        bits = values.view(unsigned)
        sign = unsigned.type(1) << unsigned.type(width - 1)
        return np.where(bits & sign, ~bits, bits | sign)
    if values.dtype.kind == "i":
        return (values.astype(np.int64) - np.iinfo(values.dtype).min).astype(unsigned)
    return values.astype(unsigned, copy=False)


def coarse(values: np.ndarray) -> np.ndarray:
    """Each value's bin (its key's top `COARSE_BITS` bits)."""
    shift = max(0, values.dtype.itemsize * 8 - COARSE_BITS)
    return (sortable(values) >> shift).astype(np.int64)


def coarse_counts(values: np.ndarray) -> np.ndarray:
    return np.bincount(coarse(values), minlength=1 << COARSE_BITS)


def order_statistics(parts: list[np.ndarray], counts: np.ndarray, ranks: list[int]) -> dict[int, float]:
    """The values of rank `ranks` (0-based) in the union of `parts`, given their summed `coarse_counts`: one pass
    over the values of the bins that hold them, then a sort of those values alone."""
    below = np.concatenate(([0], np.cumsum(counts)))
    where = {k: int(np.searchsorted(below, k, "right")) - 1 for k in ranks}
    wanted = np.zeros(len(counts), dtype=bool)
    wanted[list(set(where.values()))] = True
    found: dict[int, list[np.ndarray]] = {b: [] for b in set(where.values())}
    for part in parts:
        bins = coarse(part)
        hit = wanted[bins]
        for b in found:
            found[b].append(part[hit & (bins == b)])
    values = {b: np.sort(np.concatenate(found[b])) for b in found}
    return {k: float(values[b][k - below[b]]) for k, b in where.items()}


def percentiles(parts: list[np.ndarray], counts: np.ndarray, qs: list[float]) -> list[float]:
    """`np.percentile(all values as float64, qs)` (method "linear"), reproduced step by step from NumPy's own
    `_compute_virtual_index`, `_get_indexes` and `_lerp` so that the figures are the same bits."""
    count = int(counts.sum())
    quantiles = np.true_divide(np.asarray(qs, dtype=np.float64), 100)
    virtual = count * quantiles + (1 + quantiles * (1 - 1 - 1)) - 1  # alpha = beta = 1
    previous = np.floor(virtual)
    gamma = virtual - previous
    low = [int(min(max(p, 0), count - 1)) for p in previous]
    high = [int(min(max(p + 1, 0), count - 1)) for p in previous]
    high = [h if v < count - 1 else count - 1 for h, v in zip(high, virtual, strict=True)]
    low = [lo if v < count - 1 else count - 1 for lo, v in zip(low, virtual, strict=True)]
    values = order_statistics(parts, counts, sorted(set(low + high)))
    return [
        float(_lerp(np.float64(values[a]), np.float64(values[b]), np.float64(g)))
        for a, b, g in zip(low, high, gamma, strict=True)
    ]


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
    counts = np.zeros(bins, dtype=np.int64)
    for part in parts:
        index = np.searchsorted(edges, part.astype(np.float64), "right") - 1
        counts += np.bincount(np.minimum(index, bins - 1), minlength=bins)
    return [int(c) for c in counts], edges
