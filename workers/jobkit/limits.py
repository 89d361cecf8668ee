"""The bounds of one call (`GEOGATE_LIMIT_*`, read from `ctx.settings`): checks that refuse a call before its work
starts, or stop it when it passes a bound, with a `JobFailed` naming the argument and the variable that raises it.

Codes: `limit.tiles`, `limit.output_bytes`, `limit.features`, `limit.zones`, `limit.result_bytes`. None is
retryable: the same call passes the same bound again.
"""

import numpy as np
import numpy.typing as npt

from geogate.settings import LimitSettings, Settings
from schemas.tools import limits as bounds
from schemas.tools.limits import Bound, figure, size_text
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed

_DEFAULTS = Settings.defaults().limits
_GDAL_ONLY = {"complex_int16": np.dtype("complex64")}
"""GDAL dtypes numpy has no name for, counted as the numpy dtype rasterio reads them into."""


def limits_of(settings: Settings | None) -> LimitSettings:
    """The limits of `settings`, or their defaults (a context built without settings, as in unit tests)."""
    return settings.limits if settings is not None else _DEFAULTS


def exceeded(bound: Bound, field: str | None, what: str, settings: Settings | None) -> JobFailed:
    """The error of a call past `bound`: `field: what; at most N on this server (raise GEOGATE_LIMIT_…)`."""
    limit = figure(bound.setting, getattr(limits_of(settings), bound.setting))
    message = f"{what}; at most {limit} on this server (raise {bound.variable})"
    return JobFailed(f"limit.{bound.setting}", f"{field}: {message}" if field else message, field=field)


def as_numpy(dtype: npt.DTypeLike) -> np.dtype:
    """`dtype` as numpy knows it (rasterio's `complex_int16` as the `complex64` it is read into)."""
    return _GDAL_ONLY[dtype] if isinstance(dtype, str) and dtype in _GDAL_ONLY else np.dtype(dtype)


def widest(dtypes: tuple[str, ...] | list[str]) -> np.dtype:
    """The widest of a raster's band dtypes (what a copy of every band is counted in)."""
    return max((as_numpy(d) for d in dtypes), key=lambda d: d.itemsize)


def raster_bytes(width: int, height: int, bands: int, dtype: npt.DTypeLike) -> int:
    return width * height * bands * as_numpy(dtype).itemsize


def check_raster(
    ctx: JobContext, width: int, height: int, bands: int, dtype: npt.DTypeLike, field: str, *, read: bool = False
) -> None:
    """Refuse a raster grid larger than `GEOGATE_LIMIT_OUTPUT_BYTES`: the output a call would write, or (`read`)
    the bands it would read and keep.

    Raises:
        JobFailed: `limit.output_bytes`, on `field` (the argument that sets the grid).
    """
    size = raster_bytes(width, height, bands, dtype)
    if size > limits_of(ctx.settings).output_bytes:
        kind = "the bands read" if read else "the output"
        shape = f"{width}×{height}×{bands} {as_numpy(dtype).name}"
        bound = bounds.READ_BYTES if read else bounds.OUTPUT_BYTES
        raise exceeded(bound, field, f"{kind} would be {shape}, {size_text(size)}", ctx.settings)


def check_tiles(ctx: JobContext, count: int, field: str, tile_size: int) -> None:
    """Refuse a grid of more windows than `GEOGATE_LIMIT_TILES`.

    Raises:
        JobFailed: `limit.tiles`, on `field`.
    """
    if count > limits_of(ctx.settings).tiles:
        what = f"the grid is {count:,} windows of about {tile_size}² pixels (GEOGATE_TILE_SIZE)"
        raise exceeded(bounds.TILES, field, what, ctx.settings)


def check_zones(ctx: JobContext, count: int, field: str) -> None:
    """Refuse more zones than `GEOGATE_LIMIT_ZONES`.

    Raises:
        JobFailed: `limit.zones`, on `field`.
    """
    if count > limits_of(ctx.settings).zones:
        raise exceeded(bounds.ZONES, field, f"the layer has {count:,} zones", ctx.settings)


def check_result(settings: Settings | None, size: int) -> None:
    """Refuse a structured result longer than `GEOGATE_LIMIT_RESULT_BYTES` of JSON.

    Raises:
        JobFailed: `limit.result_bytes` (no argument: the result as a whole).
    """
    if size > limits_of(settings).result_bytes:
        raise exceeded(bounds.RESULT_BYTES, None, f"the result is {size_text(size)} of JSON", settings)


class FeatureCount:
    """Features counted as they are made, stopping the call once they pass `GEOGATE_LIMIT_FEATURES`."""

    def __init__(self, ctx: JobContext, field: str, noun: str) -> None:
        self.limit = limits_of(ctx.settings).features
        self.settings = ctx.settings
        self.field = field
        self.noun = noun
        self.count = 0

    def at_least(self, count: int) -> None:
        """Refuse before tracing when the features are known to be at least `count`.

        Raises:
            JobFailed: `limit.features`, on `field`.
        """
        if count > self.limit:
            what = f"the band makes at least {count:,} {self.noun}"
            raise exceeded(bounds.FEATURES, self.field, what, self.settings)

    def add(self, count: int = 1) -> int:
        """Count `count` more features; the total so far.

        Raises:
            JobFailed: `limit.features`, on `field`: the call made more than the bound.
        """
        self.count += count
        if self.count > self.limit:
            what = f"tracing stopped after {self.count:,} {self.noun}"
            raise exceeded(bounds.FEATURES, self.field, what, self.settings)
        return self.count
