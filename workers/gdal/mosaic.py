"""Job `raster_mosaic`: rasters merged onto the first one's grid with rasterio's `merge`, inputs in another CRS
warped on the fly (a `WarpedVRT` snapped to that grid, so each is resampled once), into an atomic GeoTIFF.

`first`, `last`, `min` and `max` are `merge`'s own methods, written chunk by chunk straight into the output. `mean`
is the valid values' sum over their count, from `merge`'s `sum` (in float64) and `count`, held in memory: at most
`MEAN_MAX_PIXELS` output pixels × bands.
"""

import contextlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import rasterio
from affine import Affine
from pyproj import CRS
from rasterio.enums import Resampling as RioResampling
from rasterio.merge import merge
from rasterio.vrt import WarpedVRT
from rasterio.warp import calculate_default_transform

from schemas.tools.mosaic import RasterMosaicArgs, RasterMosaicResult
from workers.confine import pinned
from workers.context import JobContext
from workers.errors import JobFailed
from workers.files import atomic_output, output_path, resolve_in_workspace
from workers.gdal.blocks import ALIGN_ROWS
from workers.gdal.clip import fill_value
from workers.gdal.errors import open_raster, reading, require_georeferenced, writing
from workers.gdal.outputs import file_ref
from workers.jobs import job
from workers.limits import check_raster

MEAN_MAX_PIXELS = 1 << 27
"""Output pixels × bands `mean` holds in memory (twice, as float64 sums and counts: 2 GiB)."""


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


def _sources(
    held: contextlib.ExitStack, paths: list[Path], args: RasterMosaicArgs
) -> tuple[list[Any], list[str], rasterio.DatasetReader]:
    """Every input open (warped when in another CRS than the first, what the warp leaves empty being the output's
    nodata), the warped ones' names, the first.

    Raises:
        JobFailed: an unreadable or ungeoreferenced input, a missing CRS, a band count unlike the first's.
    """
    opened = []
    for index, path in enumerate(paths):
        src = held.enter_context(open_raster(path, f"inputs[{index}]"))
        require_georeferenced(src, f"inputs[{index}]")
        opened.append(src)
    first, sources, warped = opened[0], [], []
    for index, (path, src) in enumerate(zip(paths, opened, strict=True)):
        field = f"inputs[{index}]"
        if src.count != first.count:
            raise JobFailed(
                "raster.band_count", f"{field}: has {src.count} bands, the first input {first.count}", field=field
            )
        if (src.crs is None) != (first.crs is None) or (
            src.crs is not None and CRS(src.crs.to_wkt()) != CRS(first.crs.to_wkt())
        ):
            if src.crs is None or first.crs is None:
                raise JobFailed("crs.missing", f"{field}: one of the inputs has no CRS", field=field)
            transform, width, height = snapped(src, first)
            grid = {"crs": first.crs, "transform": transform, "width": width, "height": height}
            resampling = RioResampling[args.resampling.value]
            vrt = WarpedVRT(src, nodata=fill_value(first, args.nodata), resampling=resampling, **grid)
            sources.append(held.enter_context(vrt))
            warped.append(str(path))
        else:
            sources.append(src)
    return sources, warped, first


def _profile(first: rasterio.DatasetReader, fill: float, compression: str) -> dict[str, Any]:
    profile = {"driver": "GTiff", "dtype": first.dtypes[0], "count": first.count, "crs": first.crs, "nodata": fill}
    profile |= {"tiled": True, "blockxsize": ALIGN_ROWS, "blockysize": ALIGN_ROWS, "bigtiff": "IF_SAFER"}
    return profile | ({"compress": compression} if compression != "none" else {})


def _mean(sources: list[Any], args: RasterMosaicArgs, fill: float, dtype: str) -> tuple[np.ndarray, Affine]:
    resampling = RioResampling[args.resampling.value]
    total, transform = merge(sources, method="sum", dtype="float64", nodata=fill, resampling=resampling)
    count, _ = merge(sources, method="count", dtype="int32", nodata=0, resampling=resampling)
    kind = np.dtype(dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
    if kind.kind != "f":
        mean = np.rint(mean)
    out = np.where(count > 0, mean, fill).astype(kind)
    return out, transform


def _extent(sources: list[Any]) -> tuple[int, int]:
    """Width and height of the output: the union of the inputs' bounds on the first one's resolution."""
    xres, yres = sources[0].res
    lefts, bottoms, rights, tops = zip(*(s.bounds for s in sources), strict=True)
    return math.ceil((max(rights) - min(lefts)) / xres), math.ceil((max(tops) - min(bottoms)) / yres)


def _size(sources: list[Any]) -> int:
    width, height = _extent(sources)
    return width * height * sources[0].count


def _write(tmp: Path, sources: list[Any], args: RasterMosaicArgs, profile: dict[str, Any], ctx: JobContext) -> dict:
    """Merge into `tmp`; the written grid (transform, width, height)."""
    fill = profile["nodata"]
    if args.method == "mean":
        if _size(sources) > MEAN_MAX_PIXELS:
            raise JobFailed(
                "mosaic.too_large",
                f"method: mean holds the output in memory, at most {MEAN_MAX_PIXELS} pixels × bands; "
                "use first, last, min or max",
                field="method",
            )
        data, transform = _mean(sources, args, fill, profile["dtype"])
        ctx.progress(1, 2, "merged")
        grid = {"transform": transform, "width": data.shape[2], "height": data.shape[1]}
        with writing(), rasterio.open(tmp, "w", **profile, **grid) as dst:
            dst.write(data)
        return grid
    resampling = RioResampling[args.resampling.value]
    merge(sources, method=args.method, nodata=fill, resampling=resampling, dst_path=tmp, dst_kwds=profile,
          mem_limit=256)  # fmt: skip
    with rasterio.open(tmp) as out:
        return {"transform": out.transform, "width": out.width, "height": out.height}


@job("raster_mosaic")
def raster_mosaic(args: RasterMosaicArgs, ctx: JobContext) -> RasterMosaicResult:
    """Merge `args.inputs` onto the first one's grid with `args.method` where they overlap.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable input,
            inputs with different band counts, a mean mosaic too large to hold, a write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    paths = [resolve_in_workspace(uri, ctx.roots, field=f"inputs[{i}]") for i, uri in enumerate(args.inputs)]
    dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    with contextlib.ExitStack() as held:
        sources, warped, first = _sources(held, paths, args)
        profile = _profile(first, fill_value(first, args.nodata), args.compression)
        check_raster(ctx, *_extent(sources), first.count, profile["dtype"], "inputs")  # the inputs' spread
        ctx.progress(0, 2, f"{len(sources)} inputs open, {len(warped)} warped")
        with atomic_output(Path(pinned(dst_path, "output")), ctx.fence) as tmp, reading(paths[0], "inputs"):
            grid = _write(tmp, sources, args, profile, ctx)
            ctx.progress(2, 2, f"wrote {grid['width']}×{grid['height']}")  # before the output takes its name
        crs, res = first.crs, first.res
    transform, width, height = grid["transform"], grid["width"], grid["height"]
    return RasterMosaicResult(
        output=file_ref(dst_path, "GTiff"),
        crs=crs.to_string() if crs is not None else None,
        width=width,
        height=height,
        resolution=list(res),
        bounds=list(rasterio.transform.array_bounds(height, width, transform)),
        method=args.method,
        resampling=args.resampling.value,
        warped=warped,
    )
