"""Job `raster_convert`: copy a raster block by block into another driver, compression, tiling and overviews."""

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path

import rasterio
import rasterio.shutil
from rasterio._err import CPLE_NotSupportedError
from rasterio.enums import Resampling as RioResampling
from rasterio.errors import DriverCapabilityError, DriverRegistrationError

from schemas.tools.raster import RasterConvertArgs, RasterConvertResult
from workers.gdal.blocks import strips
from workers.gdal.errors import open_raster, reading, writing
from workers.gdal.outputs import check_output_driver, file_ref
from workers.jobkit.confine import pinned, shown_paths
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output, output_path, resolve_in_workspace
from workers.jobkit.limits import check_raster, widest
from workers.tiling.grid import check_grid, tile_side

_COMPRESSING = {"GTiff", "COG"}
_WORLDFILE = {"PNG", "JPEG", "GIF", "BMP", "WEBP"}
"""Drivers that take GDAL's `WORLDFILE` creation option; given to another (ENVI), GDAL fails with no message."""


def gtiff_profile(src: rasterio.DatasetReader, args: RasterConvertArgs, *, final: bool) -> dict:
    profile = {k: v for k, v in src.profile.items() if k not in {"compress", "tiled", "blockxsize", "blockysize"}}
    profile |= {"driver": "GTiff", "bigtiff": "IF_SAFER", "interleave": "pixel" if src.count > 1 else "band"}
    if not final:  # a staging copy for a CreateCopy-only driver: fast to write, read once
        return profile | {"tiled": True, "blockxsize": 256, "blockysize": 256}
    profile["tiled"] = args.tiled
    if args.tiled:
        profile |= {"blockxsize": args.blockxsize, "blockysize": args.blockysize}
    if args.compression is not None:
        profile["compress"] = args.compression
    if args.photometric is not None:
        profile["photometric"] = args.photometric
    return profile | args.creation_options


def copy_options(args: RasterConvertArgs) -> dict:
    options: dict = {}
    if args.driver in _WORLDFILE:
        options["worldfile"] = "YES"
    if args.driver == "COG":
        options |= {"blocksize": args.blockxsize, "overview_resampling": args.overview_resampling.value.upper()}
        if args.compression is not None:
            options["compress"] = args.compression.upper()
    return options | args.creation_options


def _copy_blocks(
    src: rasterio.DatasetReader, tmp: Path, profile: dict, args: RasterConvertArgs, ctx: JobContext
) -> None:
    windows = strips(src.height, src.width)
    with rasterio.open(tmp, "w", **profile) as dst:
        dst.update_tags(**src.tags())
        for done, window in enumerate(windows, start=1):
            with reading(Path(src.name)):
                data = src.read(window=window)
            dst.write(data, window=window)
            ctx.progress(done, len(windows) + 1, f"copied {done}/{len(windows)} strips")
        if args.overviews:
            dst.build_overviews(args.overviews, RioResampling[args.overview_resampling.value])


def check_driver(args: RasterConvertArgs) -> None:
    check_output_driver(args.driver, "driver")
    if args.compression is not None and args.driver not in _COMPRESSING:
        raise JobFailed(
            "option.unsupported", f"compression: applies to GTiff and COG, not {args.driver}", field="compression"
        )


def check_bounds(src: rasterio.DatasetReader, args: RasterConvertArgs, ctx: JobContext) -> None:
    """Refuse a copy past `GEOGATE_LIMIT_OUTPUT_BYTES`, or a tiled one (GeoTIFF or COG) past `GEOGATE_LIMIT_TILES`.

    Raises:
        JobFailed: `limit.output_bytes` or `limit.tiles`, on `uri`.
    """
    check_raster(ctx, src.width, src.height, src.count, widest(src.dtypes), "uri")
    if args.driver == "COG" or (args.driver == "GTiff" and args.tiled):
        profile = gtiff_profile(src, args, final=args.driver == "GTiff")
        side = tile_side(ctx, math.lcm(profile["blockxsize"], profile["blockysize"]))
        check_grid(ctx, src.width, src.height, side, "uri")


@contextlib.contextmanager
def _driver_errors(driver: str) -> Iterator[None]:
    try:
        yield
    except (DriverRegistrationError, DriverCapabilityError, CPLE_NotSupportedError) as exc:  # a vector-only driver
        message = f"driver: GDAL cannot write {driver!r} ({shown_paths(str(exc))})"
        raise JobFailed("driver.unknown", message, field="driver") from exc


def _write(src: rasterio.DatasetReader, tmp: Path, target: Path, args: RasterConvertArgs, ctx: JobContext) -> None:
    if args.driver == "GTiff":
        _copy_blocks(src, tmp, gtiff_profile(src, args, final=True), args, ctx)
        return
    staged = tmp.with_name(f"{tmp.stem}.stage.tif")
    try:
        _copy_blocks(src, staged, gtiff_profile(src, args, final=False), args, ctx)
        with _driver_errors(args.driver):
            rasterio.shutil.copy(staged, tmp, driver=args.driver, **copy_options(args))
        staged.unlink()  # PNG/JPEG keep their CRS in `.aux.xml` and transform in `.wld`: published with `tmp`
    finally:
        staged.unlink(missing_ok=True)


def raster_convert(args: RasterConvertArgs, ctx: JobContext) -> RasterConvertResult:
    """Copy `args.uri` into `args.output` with the requested driver, compression, tiling and overviews.

    Non-GTiff drivers that only support CreateCopy (COG, PNG, JPEG) get a staged GeoTIFF first.

    Raises:
        JobFailed: a path outside the workspace, an existing output without `overwrite`, an unreadable source,
            an unsupported driver or option, or a GDAL write error.
        JobCancelled: the call was cancelled; nothing is left at `args.output`.
    """
    check_driver(args)
    src_path = resolve_in_workspace(args.uri, ctx.roots)
    dst_path = output_path(args.output, ctx.roots, overwrite=args.overwrite)
    target = Path(pinned(dst_path, "output"))  # written in the folder that was checked
    with open_raster(src_path) as src:
        check_bounds(src, args, ctx)
        with writing(), atomic_output(target, ctx.fence) as tmp:
            _write(src, tmp, target, args, ctx)
            ctx.progress(1, 1, "converted")  # a cancel that lands here still wins: the output has not taken its name
    return converted(dst_path)


def converted(dst_path: Path, sha256: str | None = None) -> RasterConvertResult:
    """The tool's result for the file written at `dst_path` (whole or by tiles alike), as GDAL reads it back (with
    its sha256 when the writer took it)."""
    with open_raster(dst_path, "output") as out:
        compression = out.compression.value.lower() if out.compression else None
        driver, overviews = out.driver, out.overviews(1)
    return RasterConvertResult(
        output=file_ref(dst_path, driver, sha256),
        driver=driver,
        compression=compression,
        size_bytes=dst_path.stat().st_size,
        overviews_built=overviews,
    )
