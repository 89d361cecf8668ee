"""Exact statistics from parts: counts, extremes and moments merged (Chan et al.'s parallel moments), order
statistics found through the tiles' coarse counts, histograms counted against the same edges NumPy uses.

What `workers.gdal.stats.band_stats` computes over all valid values at once, computed here from per-tile pieces, so
the tiled result equals the whole one: counts, min, max, percentiles and histogram counts exactly, mean and std to
rounding (sums in another order). Sorting every tile's values instead cost more than the whole job saved (34 ms per
million float32 values, 8.7 s of CPU for a 16384² band).
"""

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
        deviations = values.astype(np.float64)
        mean = float(deviations.mean())
        deviations -= mean
        np.square(deviations, out=deviations)  # not a dot product: BLAS threads would fight the other workers
        return cls(int(values.size), mean, float(deviations.sum()))

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


def coarse(values: np.ndarray) -> np.ndarray:
    """Each value's bin: the top `COARSE_BITS` bits of its key in value order (IEEE floats with the sign flipped and
    negatives inverted, signed ints offset by their minimum); uint16, or the key itself for 8-bit data."""
    width = values.dtype.itemsize * 8
    unsigned = values.view(np.dtype(f"uint{width}"))
    if width <= 8:
        return unsigned ^ np.uint8(0x80) if values.dtype.kind == "i" else unsigned
    top = (unsigned >> (width - COARSE_BITS)).astype(np.uint16)
    if values.dtype.kind == "f":  # negatives: every bit inverted; positives: the sign bit set
        return top ^ ((top >> 15) * np.uint16(0x7FFF) + np.uint16(0x8000))
    return top ^ np.uint16(0x8000) if values.dtype.kind == "i" else top


CHUNK = 1 << 18
"""Values summarised at a time: their float64 copies and bin indexes stay in the CPU's cache. One pass over a 2048²
float32 tile in chunks took 40% less time than whole-array passes, and two tiles at once on this machine's two
cores slow each other less (the passes are bound by memory bandwidth)."""


def summarise(values: np.ndarray) -> tuple[Moments, np.ndarray]:
    """The moments and coarse-bin counts of `values`, chunk by chunk."""
    moments, counts = Moments(0, 0.0, 0.0), np.zeros(1 << COARSE_BITS, dtype=np.int64)
    for start in range(0, values.size, CHUNK):
        chunk = values[start : start + CHUNK]
        moments = moments.merge(Moments.of(chunk))
        counts += np.bincount(coarse(chunk), minlength=1 << COARSE_BITS)
    return moments, counts


@dataclass(frozen=True)
class Part:
    """One tile's valid values of one band (read when needed) and their counts per coarse bin."""

    counts: np.ndarray
    values: Callable[[], np.ndarray]


def order_statistics(parts: list[Part], ranks: list[int]) -> dict[int, float]:
    """The values of rank `ranks` (0-based) in the union of `parts`: the summed counts say which bins hold them,
    then only the parts with values in those bins are read (in threads: NumPy lets go of the GIL), and only those
    values sorted."""
    counts = sum(part.counts for part in parts)
    below = np.concatenate(([0], np.cumsum(counts)))
    where = {k: int(np.searchsorted(below, k, "right")) - 1 for k in ranks}
    bins = sorted(set(where.values()))
    wanted = np.zeros(len(counts), dtype=bool)
    wanted[bins] = True
    holding = [part for part in parts if part.counts[bins].any()]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        hits = list(pool.map(lambda part: _in_bins(part.values(), wanted), holding))
    values = np.concatenate(hits) if hits else np.empty(0)
    found = {b: np.sort(values[coarse(values) == b]) for b in bins}
    return {k: float(found[b][k - below[b]]) for k, b in where.items()}


def _in_bins(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    return values[wanted[coarse(values)]]


def percentiles(parts: list[Part], qs: list[float]) -> list[float]:
    """`np.percentile(all values as float64, qs)` (method "linear"), reproduced step by step from NumPy's own
    `_compute_virtual_index`, `_get_indexes` and `_lerp` so that the figures are the same bits."""
    count = int(sum(int(part.counts.sum()) for part in parts))
    quantiles = np.true_divide(np.asarray(qs, dtype=np.float64), 100)
    virtual = count * quantiles + (1 + quantiles * (1 - 1 - 1)) - 1  # alpha = beta = 1
    previous = np.floor(virtual)
    gamma = virtual - previous
    low = [int(min(max(p, 0), count - 1)) for p in previous]
    high = [int(min(max(p + 1, 0), count - 1)) for p in previous]
    high = [h if v < count - 1 else count - 1 for h, v in zip(high, virtual, strict=True)]
    low = [lo if v < count - 1 else count - 1 for lo, v in zip(low, virtual, strict=True)]
    values = order_statistics(parts, sorted(set(low + high)))
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
