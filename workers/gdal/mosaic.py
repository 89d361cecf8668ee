"""Job `raster_mosaic`: rasters merged onto the first one's grid with rasterio's `merge`, window by window (whole,
or by tiles: `workers.gdal.windowed`), inputs in another CRS warped on the fly (a `WarpedVRT` snapped to that grid,
so each is resampled once).

`first`, `last`, `min` and `max` are `merge`'s own methods; `mean` is the valid values' sum over their count, from
`merge`'s `sum` (in float64) and `count`. Each window is one `merge` over that window's bounds on the output grid
(the grid `merge` itself makes from the inputs' union), so whole and tiled calls merge the same windows and write
the same bytes; a warped input's pixels come from its VRT's own blocks whichever window reads them.
"""

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
import rasterio.windows
from affine import Affine
from pydantic import JsonValue
from pyproj import CRS
from rasterio.enums import Resampling as RioResampling
from rasterio.merge import merge
from rasterio.vrt import WarpedVRT
from rasterio.warp import calculate_default_transform
from rasterio.windows import Window

from schemas.tools.base import Reprojection
from schemas.tools.raster import OutputRef
from schemas.tools.raster_ops import RasterMosaicArgs, RasterMosaicResult
from schemas.tools.tiling import TileWindow
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.clip import fill_value
from workers.gdal.errors import open_raster, reading, require_georeferenced
from workers.gdal.windowed import count_valid, run_whole
from workers.jobkit import objects
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace


def snapped(src: rasterio.DatasetReader, first: rasterio.DatasetReader) -> tuple[Affine, int, int]:
    """`src`'s footprint in the first raster's CRS, on the first raster's pixel grid (same size, same origin
    modulo a pixel), so `merge` places the warped pixels without resampling them a second time."""
    xres, yres = first.res
    transform, width, height = calculate_default_transform(
        src.crs, first.crs, src.width, src.height, *src.bounds, resolution=(xres, yres)
    )
    left, top = transform.c, transform.f
    right, bottom = left + width * xres, top - height * yres
    left = first.bounds.left + math.floor((left - first.bounds.left) / xres) * xres
    top = first.bounds.top + math.ceil((top - first.bounds.top) / yres) * yres
    width, height = math.ceil((right - left) / xres - 1e-9), math.ceil((top - bottom) / yres - 1e-9)
    return Affine(xres, 0.0, left, 0.0, -yres, top), max(width, 1), max(height, 1)


def in_other_crs(src: rasterio.DatasetReader, first: rasterio.DatasetReader, field: str) -> bool:
    """Whether `src` is warped onto the first input's CRS.

    Raises:
        JobFailed: `crs.missing`, naming `field`, when one of the two has a CRS and the other not.
    """
    if src.crs is None and first.crs is None:
        return False
    if src.crs is None or first.crs is None:
        raise JobFailed("crs.missing", f"{field}: one of the inputs has no CRS", field=field)
    return CRS(src.crs.to_wkt()) != CRS(first.crs.to_wkt())


def _sources(
    held: contextlib.ExitStack, paths: list[Path], resampling: str, nodata: float | None
) -> tuple[list[Any], list[dict[str, str]], rasterio.DatasetReader]:
    """Every input open (warped when in another CRS than the first, what the warp leaves empty being the output's
    nodata), the warped ones (argument, from CRS, to CRS), the first.

    Raises:
        JobFailed: an unreadable or ungeoreferenced input, a missing CRS, a band count unlike the first's.
    """
    opened = []
    for index, path in enumerate(paths):
        src = held.enter_context(open_raster(path, f"inputs[{index}]"))
        require_georeferenced(src, f"inputs[{index}]")
        opened.append(src)
    first, sources, warped = opened[0], [], []
    for index, src in enumerate(opened):
        field = f"inputs[{index}]"
        if src.count != first.count:
            raise JobFailed(
                "raster.band_count", f"{field}: has {src.count} bands, the first input {first.count}", field=field
            )
        if in_other_crs(src, first, field):
            transform, width, height = snapped(src, first)
            grid = {"crs": first.crs, "transform": transform, "width": width, "height": height}
            vrt = WarpedVRT(src, nodata=fill_value(first, nodata), resampling=RioResampling[resampling], **grid)
            sources.append(held.enter_context(vrt))
            warped.append({"input": field, "from_crs": src.crs.to_string(), "to_crs": first.crs.to_string()})
        else:
            sources.append(src)
    return sources, warped, first


def union_grid(sources: list[Any]) -> tuple[Affine, int, int]:
    """The output grid `merge` makes: the union of the inputs' bounds at the first one's resolution, its size
    rounded to whole pixels."""
    xres, yres = sources[0].res
    lefts, bottoms, rights, tops = zip(*(s.bounds for s in sources), strict=True)
    west, south, east, north = min(lefts), min(bottoms), max(rights), max(tops)
    width, height = round((east - west) / xres), round((north - south) / yres)
    return Affine.translation(west, north) * Affine.scale(xres, -yres), max(width, 1), max(height, 1)


@dataclass
class Mosaic:
    """One `raster_mosaic`: its open (and warped) inputs, the overlap rule, the output grid and profile."""

    paths: list[Path]
    method: str
    resampling: str
    nodata: float | None
    compression: str
    sources: list[Any] = field(default_factory=list)
    warped: list[dict[str, str]] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def open(self) -> "Mosaic":
        """Open (and warp) every input and lay out the output grid.

        Raises:
            JobFailed: an unreadable or ungeoreferenced input, a missing CRS, a band count unlike the first's.
        """
        with contextlib.ExitStack() as opening:
            self.sources, self.warped, first = _sources(opening, self.paths, self.resampling, self.nodata)
            transform, width, height = union_grid(self.sources)
            profile = {"driver": "GTiff", "dtype": first.dtypes[0], "count": first.count, "crs": first.crs}
            profile |= {"transform": transform, "width": width, "height": height}
            profile |= {"nodata": fill_value(first, self.nodata), "tiled": True, "bigtiff": "IF_SAFER"}
            profile |= {"blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS, "interleave": "pixel"}
            self.profile = profile | ({"compress": self.compression} if self.compression != "none" else {})
            self._held = opening.pop_all()
        return self

    def compute(self, window: TileWindow) -> np.ndarray:
        """The merged pixels of `window`: `merge` over the window's bounds on the output grid."""
        transform, fill = self.profile["transform"], self.profile["nodata"]
        bounds = rasterio.windows.bounds(Window(window.col_off, window.row_off, window.width, window.height), transform)
        options = {"bounds": bounds, "res": self.sources[0].res, "resampling": RioResampling[self.resampling]}
        with reading(self.paths[0], "inputs"):
            if self.method != "mean":
                return merge(self.sources, method=self.method, nodata=fill, **options)[0]
            total, _ = merge(self.sources, method="sum", dtype="float64", nodata=fill, **options)
            count, _ = merge(self.sources, method="count", dtype="int32", nodata=0, **options)
        kind = np.dtype(self.profile["dtype"])
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / count
        if kind.kind != "f":
            mean = np.rint(mean)
        return np.where(count > 0, mean, fill).astype(kind)

    def valid(self, block: np.ndarray) -> int:
        return count_valid(block, self.profile["nodata"])

    def to_plan(self) -> dict[str, JsonValue]:
        inputs: list[JsonValue] = [objects.shown(path) for path in self.paths]
        warped: list[JsonValue] = [dict(moved) for moved in self.warped]
        plan: dict[str, JsonValue] = {"inputs": inputs, "warped": warped, "method": self.method}
        plan["resampling"] = self.resampling
        return plan | {"nodata": None if self.nodata is None else repr(self.nodata), "compression": self.compression}

    def close(self) -> None:
        self.sources.clear()
        self._held.close()


def mosaic_of(args: RasterMosaicArgs, ctx: JobContext) -> Mosaic:
    """The call's `Mosaic`, its inputs open."""
    paths = [resolve_in_workspace(uri, ctx.roots, field=f"inputs[{i}]") for i, uri in enumerate(args.inputs)]
    return Mosaic(paths, args.method, args.resampling.value, args.nodata, args.compression).open()


def mosaic_from_plan(plan: dict[str, JsonValue], ctx: JobContext) -> Mosaic:
    """The `Mosaic` a tile runs, from its plan (the planner opened and checked the inputs)."""
    inputs = plan["inputs"]
    assert isinstance(inputs, list), "the planner writes the inputs as a list"
    paths = [resolve_in_workspace(str(uri), ctx.roots, field=f"inputs[{i}]") for i, uri in enumerate(inputs)]
    nodata = None if plan["nodata"] is None else float(str(plan["nodata"]))
    return Mosaic(paths, str(plan["method"]), str(plan["resampling"]), nodata, str(plan["compression"])).open()


def mosaicked(args: RasterMosaicArgs, output: OutputRef, valid: int, plan: dict[str, JsonValue]) -> RasterMosaicResult:
    """The result, from the written output and the plan (which inputs were warped)."""
    with rasterio.open(objects.readable(output.path)) as out:
        crs, res, width, height, bounds = out.crs, out.res, out.width, out.height, out.bounds
    warped = plan["warped"]
    assert isinstance(warped, list), "the op's plan lists the warped inputs"
    return RasterMosaicResult(
        output=output,
        crs=crs.to_string() if crs is not None else None,
        width=width,
        height=height,
        resolution=list(res),
        bounds=list(bounds),
        method=args.method,
        resampling=args.resampling.value,
        reprojected=[Reprojection.model_validate(moved) for moved in warped],
    )


def raster_mosaic(args: RasterMosaicArgs, ctx: JobContext) -> RasterMosaicResult:
    """Merge `args.inputs` onto the first one's grid with `args.method` where they overlap.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable input,
            inputs with different band counts, an output past the bounds, a write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    return mosaicked(args, *run_whole(mosaic_of, args, ctx, "inputs"))
