"""Job `cog_validate`: rio-cogeo's check of the Cloud-Optimised GeoTIFF layout, with the facts it is about."""

from rio_cogeo.cogeo import cog_validate as rio_cog_validate

from schemas.tools.previews import CogValidateArgs, CogValidateResult
from workers.gdal.errors import open_raster, reading, remote_reading
from workers.gdal.remote_guard import guarded_read
from workers.jobkit import objects
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.files import RemoteRaster, raster_input


def cog_validate(args: CogValidateArgs, ctx: JobContext) -> CogValidateResult:
    """Whether `args.uri` is a valid COG (rio-cogeo), its errors and warnings, block size, overviews, compression.

    The file is opened first as every raster input is (workspace checks; a remote one as a GeoTIFF only), then
    rio-cogeo reads its structure (IFD order, tiling, overviews, ghost header).

    Raises:
        JobFailed: a path outside the workspace or a host not allowed, an unreadable raster.
    """
    source = raster_input(args.uri, ctx.roots, ctx.settings)
    with open_raster(source) as src:
        block_y, block_x = src.block_shapes[0]
        facts = {
            "width": src.width,
            "height": src.height,
            "blocksize": [block_x, block_y],
            "tiled": block_x != src.width and bool(src.profile.get("tiled", False)),
            "overviews": src.overviews(1),
            "compression": src.compression.value.lower() if src.compression else None,
        }
    ctx.progress(0.5, 1, "checking the layout")
    if isinstance(source, RemoteRaster):
        with guarded_read(source) as env, remote_reading(source):
            valid, errors, warnings = rio_cog_validate(source.gdal_path, strict=args.strict, config=env, quiet=True)
    else:
        with reading(source):
            valid, errors, warnings = rio_cog_validate(pinned(source), strict=args.strict, quiet=True)
    return CogValidateResult(path=objects.shown(source), valid=valid, errors=errors, warnings=warnings, **facts)
