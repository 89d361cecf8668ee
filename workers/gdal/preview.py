"""Jobs `raster_preview` and `vector_preview`: small pictures returned as MCP image content.

rio-tiler reads the raster's decimated preview (overviews when the file has them, so a remote COG costs a few
range requests), rescales and colour-ramps it, and encodes it (GDAL's PNG or JPEG driver). Vectors are drawn with
`rasterio.features.rasterize` onto a bounded canvas and encoded the same way: no imaging library beyond those.

A picture has to fit one image block (`MAX_BLOCK_CHARS` of base64). The asked size is kept when the PNG fits, or
else (format `auto`) a JPEG at the first quality that fits; only when neither fits is the picture drawn smaller,
and the result's `reduction` says so.
"""

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import rasterio.features
import shapely
from pyproj import CRS, Geod
from rasterio.transform import from_bounds
from rio_tiler.colormap import apply_cmap, cmap
from rio_tiler.errors import NoOverviewWarning, RioTilerError
from rio_tiler.io import Reader
from rio_tiler.models import ImageData
from rio_tiler.utils import render

from schemas.content import MAX_BLOCK_CHARS
from schemas.tools.previews import RasterPreviewArgs, RasterPreviewResult, VectorPreviewArgs, VectorPreviewResult
from workers.gdal.errors import check_bands, open_raster, require_georeferenced
from workers.gdal.vector_io import read_layer
from workers.jobkit import objects
from workers.jobkit.confine import shown_paths
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import raster_input, resolve_in_workspace

SHRINK_TRIES = 4
"""Times a picture is made smaller when no encoding of it fits one image block (`MAX_BLOCK_CHARS` of base64)."""
JPEG_QUALITIES = (90, 80, 70, 60, 50)
"""JPEG qualities tried in turn, the first that fits the block kept."""
BLOCK_BYTES = MAX_BLOCK_CHARS * 3 // 4
"""The most bytes of image one block holds once base64-encoded."""


def fits(image: bytes) -> bool:
    return math.ceil(len(image) / 3) * 4 <= MAX_BLOCK_CHARS


def _smaller(size: int, image: bytes) -> int:
    """A side that should bring the image under the block limit (its bytes scale with the pixel count)."""
    ratio = math.sqrt(BLOCK_BYTES / len(image)) * 0.9
    return max(16, min(size - 1, int(size * ratio)))


@dataclass
class Drawing:
    """A picture before encoding: uint8 bands (one grey or three RGB), an optional 0/255 validity mask (drawn
    transparent in a PNG, white in a JPEG) and an optional colour ramp for one band."""

    data: np.ndarray
    mask: np.ndarray | None = None
    colormap: dict | None = None

    def png(self) -> bytes:
        return render(self.data, mask=self.mask, colormap=self.colormap, img_format="PNG", ZLEVEL=9)

    def jpeg(self, quality: int) -> bytes:
        data, valid = self.data, self.mask
        if self.colormap is not None:
            data, alpha = apply_cmap(data, self.colormap)
            valid = alpha if valid is None else np.where(valid != 0, alpha, 0)
        if valid is not None:
            data = np.where(valid[np.newaxis] == 0, 255, data).astype("uint8")
        return render(data, img_format="JPEG", QUALITY=quality)


@dataclass
class Encoded:
    """A drawing encoded: the bytes, `png` or `jpeg`, the JPEG quality, the size of a PNG tried first and too large."""

    image: bytes
    format: str
    quality: int | None = None
    png_over: int | None = None


def encode(drawing: Drawing, wanted: str) -> Encoded:
    """The PNG when it fits a block (or `wanted` is `png`), else the JPEG at the first quality that fits, else the
    smallest encoding tried (too large: the caller draws smaller; line art's PNG beats any JPEG)."""
    tried = []
    if wanted in ("auto", "png"):
        tried.append(Encoded(drawing.png(), "png"))
        if wanted == "png" or fits(tried[0].image):
            return tried[0]
    png_over = len(tried[0].image) if tried else None
    for quality in JPEG_QUALITIES:
        tried.append(Encoded(drawing.jpeg(quality), "jpeg", quality, png_over))
        if fits(tried[-1].image):
            return tried[-1]
    return min(tried, key=lambda encoded: len(encoded.image))


def fitted(draw_at: Callable[[int], Drawing], asked: int, wanted: str) -> tuple[Drawing, Encoded, str | None]:
    """The drawing at the asked size, encoded to fit one image block, drawn smaller when no encoding fits; and a
    sentence saying what was given up (a lossy JPEG instead of the PNG, pixels), None when nothing was.

    Raises:
        JobFailed: the picture still does not fit after `SHRINK_TRIES` smaller drawings.
    """
    size, first = asked, None
    for _ in range(SHRINK_TRIES + 1):
        drawing = draw_at(size)
        encoded = encode(drawing, wanted)
        first = first or (drawing, encoded)
        if fits(encoded.image):
            return drawing, encoded, _reduction(asked, (drawing, encoded), first)
        size = _smaller(size, encoded.image)
    raise JobFailed("preview.too_large", "max_size: the picture does not fit an image block", field="max_size")


def _reduction(asked: int, sent: tuple[Drawing, Encoded], first: tuple[Drawing, Encoded]) -> str | None:
    (drawing, encoded), (big, tried) = sent, first
    kb, cap = (lambda n: f"{n / 1000:.0f} KB"), f"the {BLOCK_BYTES / 1000:.0f} KB an image block holds"
    if drawing is not big:
        what = "PNG" if tried.format == "png" else f"JPEG at quality {tried.quality}"
        height, width = drawing.data.shape[-2:]
        was = f"the {what} of {big.data.shape[-1]}×{big.data.shape[-2]} was {kb(len(tried.image))}"
        return f"asked {asked} px, returned {width}×{height}: {was}, over {cap}"
    if encoded.png_over is not None:
        return f"returned as JPEG (quality {encoded.quality}): the PNG was {kb(encoded.png_over)}, over {cap}"
    if encoded.format == "jpeg" and encoded.quality != JPEG_QUALITIES[0]:
        return f"JPEG quality {encoded.quality}: higher qualities were over {cap}"
    return None


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


def _picture(args: RasterPreviewArgs, mode: str, img: ImageData) -> tuple[Drawing, dict]:
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
        return Drawing(data, alpha), figures
    lows, highs = _percentiles(img, *args.percentiles)
    scaled = img.rescale(in_range=list(zip(lows, highs, strict=True)))
    colormap = cmap.get(args.colormap) if mode == "stretch" else None
    figures = {"stretch_min": lows, "stretch_max": highs, "colormap": args.colormap if colormap else None}
    return Drawing(scaled.array.data, scaled.mask, colormap), figures


def _check_colormap(name: str) -> None:
    if name not in cmap.list():
        raise JobFailed(
            "option.unsupported",
            f"colormap: {name!r} is not a rio-tiler colormap (try viridis, terrain, gray)",
            field="colormap",
        )


def raster_preview(args: RasterPreviewArgs, ctx: JobContext) -> RasterPreviewResult:
    """A quicklook of `args.uri` (stretch, hillshade or RGB), at most `args.max_size` a side.

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
        resampling = "bilinear" if mode == "hillshade" else "average"
        read: dict[str, tuple[ImageData, dict]] = {}

        def draw_at(size: int) -> Drawing:
            ctx.progress(0, 1, f"reading a {size}-pixel preview")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", NoOverviewWarning)  # small files have none; the read is the same
                    reader = Reader(input=str(source), dataset=src)
                    img = reader.preview(indexes=bands, max_size=size, resampling_method=resampling)
            except RioTilerError as exc:
                message = f"uri: rio-tiler could not read a preview: {shown_paths(str(exc))}"
                raise JobFailed("gdal.corrupt", message, field="uri") from exc
            drawing, figures = _picture(args, mode, img)
            read["last"] = (img, figures)
            return drawing

        _, encoded, reduction = fitted(draw_at, args.max_size, args.format)
        img, figures = read["last"]
        source_size = [src.width, src.height]
    ctx.progress(1, 1, "rendered")
    return RasterPreviewResult(
        width=img.width, height=img.height, **_figures(encoded, args.max_size, reduction), path=objects.shown(source),
        mode=mode, bands=bands, percentiles=list(args.percentiles), source_size=source_size,
        crs=img.crs.to_string() if img.crs else None, bounds=list(img.bounds), **figures,
    ).with_image(encoded.image)  # fmt: skip


def _figures(encoded: Encoded, asked: int, reduction: str | None) -> dict:
    return {
        "format": encoded.format, "mime_type": f"image/{encoded.format}", "image_bytes": len(encoded.image),
        "quality": encoded.quality, "asked_size": asked, "reduction": reduction,
    }  # fmt: skip


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


def draw(geometry: np.ndarray, size: int, fill: list[int], stroke: list[int]) -> tuple[Drawing, list[float]]:
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
    return Drawing(rgb), list(bounds)


def vector_preview(args: VectorPreviewArgs, ctx: JobContext) -> VectorPreviewResult:
    """A drawing of a layer's geometries, at most `args.max_size` a side.

    Raises:
        JobFailed: a path outside the workspace, an unreadable layer, an unknown layer.
        JobCancelled: the call was cancelled.
    """
    path = resolve_in_workspace(args.uri, ctx.roots)
    layer = read_layer(path, args.layer, ctx)
    fill, stroke, bounds = list(args.fill), list(args.stroke), []

    def draw_at(size: int) -> Drawing:
        drawing, bounds[:] = draw(layer.geometry, size, fill, stroke)
        return drawing

    drawing, encoded, reduction = fitted(draw_at, args.max_size, args.format)
    height, width = drawing.data.shape[-2:]
    return VectorPreviewResult(
        width=width, height=height, **_figures(encoded, args.max_size, reduction), path=objects.shown(path),
        layer=layer.name, feature_count=len(layer.geometry), crs=layer.crs, bounds=bounds,
    ).with_image(encoded.image)  # fmt: skip
