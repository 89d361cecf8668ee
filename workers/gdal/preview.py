"""Jobs `raster_preview` and `vector_preview`: small PNG pictures returned as MCP image content.

rio-tiler reads the raster's decimated preview (overviews when the file has them, so a remote COG costs a few
range requests), rescales and colour-ramps it, and encodes the PNG (GDAL's PNG driver). Vectors are drawn with
`rasterio.features.rasterize` onto a bounded canvas and encoded the same way: no imaging library beyond those.
"""

import math
import warnings

import numpy as np
import rasterio.features
import shapely
from pyproj import CRS, Geod
from rasterio.transform import from_bounds
from rio_tiler.colormap import cmap
from rio_tiler.errors import NoOverviewWarning, RioTilerError
from rio_tiler.io import Reader
from rio_tiler.models import ImageData
from rio_tiler.utils import render

from schemas.content import MAX_BLOCK_CHARS
from schemas.tools.previews import RasterPreviewArgs, RasterPreviewResult, VectorPreviewArgs, VectorPreviewResult
from workers.gdal.errors import check_bands, open_raster, require_georeferenced
from workers.gdal.vector_io import read_layer
from workers.jobkit.confine import shown_paths
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import raster_input, resolve_in_workspace

SHRINK_TRIES = 4
"""Times a picture is made smaller when its PNG would not fit one image block (`MAX_BLOCK_CHARS` of base64)."""


def fits(png: bytes) -> bool:
    return math.ceil(len(png) / 3) * 4 <= MAX_BLOCK_CHARS


def _smaller(size: int, png: bytes) -> int:
    """A side that should bring the PNG under the block limit (its bytes scale with the pixel count)."""
    ratio = math.sqrt(MAX_BLOCK_CHARS * 0.75 / len(png)) * 0.9
    return max(16, min(size - 1, int(size * ratio)))


# --- raster ---------------------------------------------------------------------------------------------------


def _mode(args: RasterPreviewArgs, count: int) -> tuple[str, list[int]]:
    mode = args.mode if args.mode != "auto" else ("rgb" if count >= 3 and not args.bands else "stretch")
    if args.mode == "auto" and args.bands is not None and len(args.bands) == 3:
        mode = "rgb"
    if mode == "rgb" and count < 3 and args.bands is None:
        raise JobFailed("band.out_of_range", f"mode: rgb needs three bands; the raster has {count}", field="mode")
    bands = args.bands or ([1, 2, 3] if mode == "rgb" else [1])
    check_bands(bands, count, "bands")
    return mode, bands


def _percentiles(img: ImageData, low: float, high: float) -> tuple[list[float], list[float]]:
    lows, highs = [], []
    for band in img.array:
        valid = band.compressed() if np.ma.isMaskedArray(band) else np.asarray(band).ravel()
        valid = valid[np.isfinite(valid)]
        if valid.size == 0:
            lows.append(0.0)
            highs.append(1.0)
            continue
        lo, hi = np.percentile(valid.astype("float64"), [low, high])
        lows.append(float(lo))
        highs.append(float(hi) if hi > lo else float(lo) + 1.0)
    return lows, highs


def pixel_metres(
    crs: CRS | None, bounds: tuple[float, float, float, float], width: int, height: int
) -> tuple[float, float]:
    """Width and height of one picture pixel in metres (on the ellipsoid at the centre for a geographic CRS)."""
    left, bottom, right, top = bounds
    dx, dy = (right - left) / width, (top - bottom) / height
    if crs is None or not crs.is_geographic:
        factor = crs.axis_info[0].unit_conversion_factor if crs is not None and crs.axis_info else 1.0
        return dx * factor, dy * factor
    geod = Geod(ellps="WGS84")
    lon, lat = (left + right) / 2, (bottom + top) / 2
    return geod.inv(lon, lat, lon + dx, lat)[2], geod.inv(lon, lat, lon, lat + dy)[2]


def hillshade(z: np.ndarray, xres: float, yres: float, azimuth: float, altitude: float, z_factor: float) -> np.ndarray:
    """Shaded relief in 0..1: the cosine between each cell's surface normal and the direction of the light.

    Hand-written (a dozen numpy lines on a ≤ 1024² picture): rio-tiler has no terrain algorithm, and the tool's
    full-resolution `raster_terrain` (issue 32 part A) is a job of its own, not a library call for a preview.
    """
    dz_east = _slope(z * z_factor, 1) / xres
    dz_north = -_slope(z * z_factor, 0) / yres  # rows run south
    az, alt = np.radians(azimuth), np.radians(altitude)
    light = (np.sin(az) * np.cos(alt), np.cos(az) * np.cos(alt), np.sin(alt))
    shade = (-dz_east * light[0] - dz_north * light[1] + light[2]) / np.sqrt(1 + dz_east**2 + dz_north**2)
    return np.clip(shade, 0.0, 1.0)


def _slope(z: np.ndarray, axis: int) -> np.ndarray:
    """The gradient of `z` along `axis`; flat along an axis one pixel long (a single row or column has no slope
    across it, and `np.gradient` needs two)."""
    return np.gradient(z, axis=axis) if z.shape[axis] > 1 else np.zeros_like(z)


def _picture(args: RasterPreviewArgs, mode: str, bands: list[int], img: ImageData) -> tuple[bytes, dict]:
    mask = np.ma.getmaskarray(img.array).any(axis=0)
    if mode == "hillshade":
        crs = CRS.from_wkt(img.crs.to_wkt()) if img.crs else None
        xres, yres = pixel_metres(crs, img.bounds, img.width, img.height)
        z = np.ma.filled(img.array[0].astype("float64"), np.nan)
        shade = hillshade(
            np.where(np.isfinite(z), z, np.nanmean(z)), xres, yres, args.azimuth, args.altitude, args.z_factor
        )
        data = np.round(shade * 255).astype("uint8")[np.newaxis]
        figures = {"stretch_min": [], "stretch_max": [], "colormap": None}
        figures["hillshade"] = {"azimuth": args.azimuth, "altitude": args.altitude, "z_factor": args.z_factor}
        figures["hillshade"] |= {"pixel_width_m": xres, "pixel_height_m": yres}
        alpha = np.where(mask, 0, 255).astype("uint8") if mask.any() else None  # no alpha band: a smaller PNG
        return render(data, mask=alpha, img_format="PNG", ZLEVEL=9), figures
    lows, highs = _percentiles(img, *args.percentiles)
    scaled = img.rescale(in_range=list(zip(lows, highs, strict=True)))
    colormap = cmap.get(args.colormap) if mode == "stretch" else None
    png = scaled.render(img_format="PNG", colormap=colormap, ZLEVEL=9)
    return png, {"stretch_min": lows, "stretch_max": highs, "colormap": args.colormap if colormap else None}


def _check_colormap(name: str) -> None:
    if name not in cmap.list():
        raise JobFailed(
            "option.unsupported",
            f"colormap: {name!r} is not a rio-tiler colormap (try viridis, terrain, gray)",
            field="colormap",
        )


def raster_preview(args: RasterPreviewArgs, ctx: JobContext) -> RasterPreviewResult:
    """A PNG quicklook of `args.uri` (stretch, hillshade or RGB), at most `args.max_size` a side.

    Raises:
        JobFailed: a path outside the workspace or a host not allowed, an unreadable raster, a band out of range,
            an unknown colormap.
        JobCancelled: the call was cancelled.
    """
    _check_colormap(args.colormap)
    source = raster_input(args.uri, ctx.roots, ctx.settings)
    with open_raster(source) as src:
        require_georeferenced(src)
        mode, bands = _mode(args, src.count)
        size, source_size = args.max_size, [src.width, src.height]
        resampling = "bilinear" if mode == "hillshade" else "average"
        for _ in range(SHRINK_TRIES + 1):
            ctx.progress(0, 1, f"reading a {size}-pixel preview")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", NoOverviewWarning)  # small files have none; the read is the same
                    reader = Reader(input=str(source), dataset=src)
                    img = reader.preview(indexes=bands, max_size=size, resampling_method=resampling)
            except RioTilerError as exc:
                message = f"uri: rio-tiler could not read a preview: {shown_paths(str(exc))}"
                raise JobFailed("gdal.corrupt", message, field="uri") from exc
            png, figures = _picture(args, mode, bands, img)
            if fits(png):
                break
            size = _smaller(size, png)
        else:
            raise JobFailed("preview.too_large", "max_size: the picture does not fit an image block", field="max_size")
    ctx.progress(1, 1, "rendered")
    return RasterPreviewResult(
        width=img.width, height=img.height, png_bytes=len(png), path=str(source), mode=mode, bands=bands,
        percentiles=list(args.percentiles), source_size=source_size, crs=img.crs.to_string() if img.crs else None,
        bounds=list(img.bounds), **figures,
    ).with_png(png)  # fmt: skip


# --- vector ---------------------------------------------------------------------------------------------------


def canvas(bounds: tuple[float, float, float, float], max_size: int) -> tuple[int, int, tuple[float, ...]]:
    """Width, height and padded bounds of a picture of `bounds`, its longer side `max_size`."""
    left, bottom, right, top = bounds
    span_x, span_y = max(right - left, 1e-9), max(top - bottom, 1e-9)
    pad = 0.03 * max(span_x, span_y)
    left, bottom, right, top = left - pad, bottom - pad, right + pad, top + pad
    scale = max_size / max(right - left, top - bottom)
    width, height = max(1, round((right - left) * scale)), max(1, round((top - bottom) * scale))
    return width, height, (left, bottom, right, top)


def draw(geometry: np.ndarray, size: int, fill: list[int], stroke: list[int]) -> tuple[bytes, int, int, list[float]]:
    present = geometry[~shapely.is_missing(geometry) & ~shapely.is_empty(geometry)]
    bounds = tuple(shapely.total_bounds(present).tolist()) if len(present) else (0.0, 0.0, 1.0, 1.0)
    width, height, padded = canvas(bounds, size)
    transform = from_bounds(*padded, width, height)
    kinds = shapely.get_type_id(present)
    areas = present[np.isin(kinds, [3, 6, 7])]
    lines = np.concatenate([shapely.boundary(areas[shapely.get_type_id(areas) != 7]), present[~np.isin(kinds, [3, 6])]])
    paint = np.zeros((height, width), dtype="uint8")
    if len(areas):
        rasterio.features.rasterize(areas, out=paint, transform=transform, default_value=1)
    if len(lines):
        rasterio.features.rasterize(lines, out=paint, transform=transform, default_value=2, all_touched=True)
    rgb = np.full((3, height, width), 255, dtype="uint8")
    for channel in range(3):
        rgb[channel][paint == 1] = fill[channel]
        rgb[channel][paint == 2] = stroke[channel]
    return render(rgb, img_format="PNG", ZLEVEL=9), width, height, list(bounds)


def vector_preview(args: VectorPreviewArgs, ctx: JobContext) -> VectorPreviewResult:
    """A PNG drawing of a layer's geometries, at most `args.max_size` a side.

    Raises:
        JobFailed: a path outside the workspace, an unreadable layer, an unknown layer.
        JobCancelled: the call was cancelled.
    """
    path = resolve_in_workspace(args.uri, ctx.roots)
    layer = read_layer(path, args.layer, ctx)
    size = args.max_size
    for _ in range(SHRINK_TRIES + 1):
        png, width, height, bounds = draw(layer.geometry, size, list(args.fill), list(args.stroke))
        if fits(png):
            break
        size = _smaller(size, png)
    else:
        raise JobFailed("preview.too_large", "max_size: the picture does not fit an image block", field="max_size")
    return VectorPreviewResult(
        width=width, height=height, png_bytes=len(png), path=str(path), layer=layer.name,
        feature_count=len(layer.geometry), crs=layer.crs, bounds=bounds,
    ).with_png(png)  # fmt: skip
