"""The pieces tiled statistics are merged from: coarse bins that keep value order in every dtype, order statistics
and percentiles equal to NumPy's over all values at once."""

import numpy as np
import pytest

from workers.gdal.stats_merge import Moments, Part, coarse, percentiles, summarise

DTYPES = ["uint8", "int8", "uint16", "int16", "int32", "uint32", "float32", "float64"]


def sample(dtype: str, n: int = 20_000) -> np.ndarray:
    rng = np.random.default_rng(3)
    if dtype.startswith("float"):
        return (rng.normal(0, 1e3, n) * rng.choice([1e-3, 1, 1e6], n)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_coarse_bins_never_put_a_larger_value_in_a_lower_bin(dtype: str) -> None:
    ordered = np.sort(sample(dtype))

    bins = coarse(ordered).astype(np.int64)

    assert np.all(np.diff(bins) >= 0)
    assert summarise(ordered)[1].sum() == ordered.size


@pytest.mark.parametrize("dtype", DTYPES)
def test_percentiles_from_parts_equal_numpys_over_all_values(dtype: str) -> None:
    values = sample(dtype)
    pieces = np.array_split(values, 7)
    parts = [Part(summarise(p)[1], lambda p=p: p) for p in pieces]
    qs = [0.0, 1.0, 25.0, 33.3, 50.0, 99.9, 100.0]

    assert percentiles(parts, qs) == [float(v) for v in np.percentile(values.astype(np.float64), qs)]


def test_merged_moments_equal_the_moments_of_all_values() -> None:
    values = sample("float32")
    merged = Moments(0, 0.0, 0.0)
    for piece in np.array_split(values, 5):
        merged = merged.merge(Moments.of(piece))

    wide = values.astype(np.float64)
    assert merged.count == values.size
    assert merged.mean == pytest.approx(wide.mean(), rel=1e-12)
    assert merged.std == pytest.approx(wide.std(), rel=1e-12)
