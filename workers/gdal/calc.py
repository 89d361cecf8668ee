"""Job `raster_calc`: band math over aligned rasters, the expression checked by `schemas.tools.expression` and
evaluated by numexpr window by window (whole, or by tiles: `workers.gdal.windowed`)."""

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numexpr
import numpy as np
import rasterio
from pydantic import JsonValue
from rasterio.enums import MaskFlags
from rasterio.windows import Window

from schemas.tools.expression import Band, ExpressionError, Parsed, parse
from schemas.tools.raster import OutputRef
from schemas.tools.raster_ops import RasterCalcArgs, RasterCalcResult
from schemas.tools.tiling import TileWindow
from workers.gdal.errors import open_raster, reading
from workers.gdal.windowed import count_valid, output_profile, run_whole, shown_nodata
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace


def default_nodata(dtype: str) -> float:
    """NaN for floats, the lowest value of a signed integer type, the highest of an unsigned one."""
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return float("nan")
    info = np.iinfo(kind)
    return float(info.min if kind.kind == "i" else info.max)


_NUMEXPR_ERRORS = (ArithmeticError, ValueError, TypeError, KeyError, NotImplementedError)
"""What numexpr raises for an expression the grammar allows but it cannot compile or compute: types it cannot
combine (`&` of numbers), an exponent it cannot turn into a power (`a ** 1e308`)."""


def checked(args: RasterCalcArgs) -> Parsed:
    """The expression parsed again on the worker (the gateway checked it; a worker trusts no queue), and tried by
    numexpr on one pixel of ones, so that what numexpr refuses fails before any work, not in the middle of it.

    Raises:
        JobFailed: `expression.invalid`, naming `expression` (and the column, for a part outside the grammar).
    """
    try:
        parsed = parse(args.expression, set(args.inputs))
    except ExpressionError as exc:
        raise JobFailed("expression.invalid", f"expression: {exc}", field="expression") from exc
    try:
        numexpr.evaluate(parsed.text, local_dict={b.variable: np.ones(1) for b in parsed.bands}, global_dict={})
    except _NUMEXPR_ERRORS as exc:
        raise _not_evaluable(exc) from exc
    return parsed


def _not_evaluable(exc: Exception) -> JobFailed:
    return JobFailed("expression.invalid", f"expression: cannot be evaluated: {exc}", field="expression")


@dataclass
class Calc:
    """One `raster_calc`: its open inputs, the bands the expression reads, the output's type and nodata."""

    parsed: Parsed
    paths: dict[str, Path]
    dtype: str
    nodata: float
    compression: str
    sources: dict[str, rasterio.DatasetReader] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def open(self) -> "Calc":
        """Open every input and check the grids agree and the bands exist.

        Raises:
            JobFailed: an unreadable input, inputs on different grids (`raster.misaligned`, naming the input), or a
                band the input lacks (`band.out_of_range`, naming `expression`).
        """
        with contextlib.ExitStack() as opening:  # on a failure the inputs close now, not whenever the GC runs:
            # a suspended `open_raster` exits its GDAL environment in whatever code runs then (rasterio's `EnvError`)
            for name, path in self.paths.items():
                self.sources[name] = opening.enter_context(open_raster(path, f"inputs.{name}"))
            first_name, first = next(iter(self.sources.items()))
            for name, src in self.sources.items():
                _same_grid(first_name, first, name, src)
            for band in self.parsed.bands:
                count = self.sources[band.name].count
                if band.band > count:
                    raise JobFailed(
                        "band.out_of_range",
                        f"expression: {band.name}[{band.band}] does not exist; {band.name} has bands 1..{count}",
                        field="expression",
                    )
            self.profile = output_profile(first, self.dtype, self.nodata, self.compression)
            self._held = opening.pop_all()
        return self

    def compute(self, window: TileWindow) -> np.ndarray:
        """The output's pixels in `window`: the expression over float64 bands; nodata where any band read is nodata
        or the result is not finite (then rounded and clipped into an integer dtype)."""
        target = Window(window.col_off, window.row_off, window.width, window.height)
        arrays: dict[str, np.ndarray] = {}
        invalid = np.zeros((window.height, window.width), dtype=bool)
        for band in self.parsed.bands:
            values, missing = self._read(band, target)
            arrays[band.variable] = values
            if missing is not None:
                invalid |= missing
        try:
            result = numexpr.evaluate(self.parsed.text, local_dict=arrays, global_dict={})
        except _NUMEXPR_ERRORS as exc:  # `checked` tried it on one pixel; a tile's plan is checked there too
            raise _not_evaluable(exc) from exc
        return self._cast(np.broadcast_to(result, invalid.shape), invalid)[np.newaxis]

    def _read(self, band: Band, window: Window) -> tuple[np.ndarray, np.ndarray | None]:
        src = self.sources[band.name]
        with reading(self.paths[band.name], f"inputs.{band.name}"):
            raw = src.read(band.band, window=window)
            flags = src.mask_flag_enums[band.band - 1]
            if MaskFlags.all_valid in flags:
                missing = None
            elif MaskFlags.nodata in flags and src.nodata is not None:
                missing = np.isnan(raw) if np.isnan(src.nodata) else raw == src.nodata
            else:  # an alpha band or an internal mask
                missing = src.read_masks(band.band, window=window) == 0
        return raw.astype(np.float64), missing

    def _cast(self, result: np.ndarray, invalid: np.ndarray) -> np.ndarray:
        kind = np.dtype(self.dtype)
        if kind.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                out = result.astype(kind)
            invalid = invalid | ~np.isfinite(out)
        else:
            invalid = invalid | ~np.isfinite(result)
            info = np.iinfo(kind)
            with np.errstate(invalid="ignore"):
                out = np.clip(np.rint(result), info.min, info.max).astype(kind)
        out[invalid] = self.nodata
        return out

    def valid(self, block: np.ndarray) -> int:
        return count_valid(block, self.nodata)

    def to_plan(self) -> dict[str, JsonValue]:
        paths: dict[str, JsonValue] = {name: objects.shown(path) for name, path in self.paths.items()}
        plan: dict[str, JsonValue] = {"inputs": paths, "expression": self.parsed.source, "dtype": self.dtype}
        return plan | {"nodata": repr(self.nodata), "compression": self.compression}  # NaN has no JSON number

    def close(self) -> None:
        self.sources.clear()
        self._held.close()


def _same_grid(first_name: str, first: rasterio.DatasetReader, name: str, src: rasterio.DatasetReader) -> None:
    same = (src.width, src.height) == (first.width, first.height) and src.crs == first.crs
    if not same or not src.transform.almost_equals(first.transform):
        raise JobFailed(
            "raster.misaligned",
            f"inputs.{name}: its grid ({src.width}×{src.height}, {src.crs}, {tuple(src.transform)[:6]}) is not "
            f"that of {first_name} ({first.width}×{first.height}, {first.crs}, {tuple(first.transform)[:6]}); "
            "align it first with raster_reproject (same CRS, resolution, bounds)",
            field=f"inputs.{name}",
        )


def calc_of(args: RasterCalcArgs, ctx: JobContext) -> Calc:
    """The call's `Calc`, its inputs open and checked."""
    paths = {name: resolve_in_workspace(uri, ctx.roots, field=f"inputs.{name}") for name, uri in args.inputs.items()}
    nodata = args.nodata if args.nodata is not None else default_nodata(args.dtype)
    return Calc(checked(args), paths, args.dtype, nodata, args.compression).open()


def calc_from_plan(plan: dict[str, JsonValue], ctx: JobContext) -> Calc:
    """The `Calc` a tile runs, from its plan (the planner checked the expression and the inputs)."""
    inputs: dict[str, JsonValue] = plan["inputs"]  # type: ignore[assignment]
    paths = {name: resolve_in_workspace(str(uri), ctx.roots, field=f"inputs.{name}") for name, uri in inputs.items()}
    parsed = parse(str(plan["expression"]), set(paths))
    nodata = float(str(plan["nodata"]))
    return Calc(parsed, paths, str(plan["dtype"]), nodata, str(plan["compression"])).open()


def calculated(args: RasterCalcArgs, output: OutputRef, valid: int, plan: dict[str, JsonValue]) -> RasterCalcResult:
    parsed = checked(args)
    with rasterio.open(objects.readable(output.path)) as out:
        width, height, nodata = out.width, out.height, out.nodata
    return RasterCalcResult(
        output=output,
        expression=args.expression,
        bands_read=[f"{b.name}[{b.band}]" for b in parsed.bands],
        dtype=args.dtype,
        nodata=shown_nodata(nodata),
        width=width,
        height=height,
        valid_pixels=valid,
    )


def raster_calc(args: RasterCalcArgs, ctx: JobContext) -> RasterCalcResult:
    """Evaluate `args.expression` over the inputs' bands and write a one-band GeoTIFF at `args.output`.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable or
            misaligned input, a band that does not exist, an expression that cannot be evaluated, a write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    return calculated(args, *run_whole(calc_of, args, ctx, "inputs"))
