"""Raster layers of a map: only the part of the raster under the frame is read, decimated by GDAL (overviews when
the file has them) to at most `OVERSAMPLE` times the frame's pixels, then warped onto the frame's pixel grid and
coloured: a stretch through a matplotlib colormap, a hillshade, or three bands as RGB."""

import math
from dataclasses import dataclass

import matplotlib
import numpy as np
from affine import Affine
from matplotlib.colors import Colormap, to_hex
from pyproj import CRS
from rasterio.enums import Resampling
from rasterio.warp import reproject, transform_bounds
from rasterio.windows import Window, from_bounds

from schemas.tools.maps import DrawnLayer, MapClass, RasterLayer
from workers.gdal.errors import check_bands, open_raster, require_georeferenced
from workers.gdal.preview import hillshade, pixel_metres
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import raster_input
from workers.maps.frame import Box, Frame

OVERSAMPLE = 2
"""Source pixels read per frame pixel, at most, along each axis."""
RAMP_STEPS = 5
"""Legend entries of a stretch: its low value, its high value and the steps between."""


@dataclass
class RasterPicture:
    """A raster layer ready to draw: RGBA on the frame's pixels (None when nothing falls in the frame)."""

    rgba: np.ndarray | None
    drawn: DrawnLayer


def colormap(name: str, field: str) -> Colormap:
    """The matplotlib colormap `name`.

    Raises:
        JobFailed: `option.unsupported` on `field`.
    """
    try:
        return matplotlib.colormaps[name]
    except KeyError as exc:
        message = f"{field}: {name!r} is not a matplotlib colormap (try viridis, terrain, gray, tab10)"
        raise JobFailed("option.unsupported", message, field=field) from exc


def source_bounds(layer: RasterLayer, field: str, ctx: JobContext) -> tuple[CRS | None, Box]:
    """A raster's CRS and bounds, read from its header."""
    with open_raster(raster_input(layer.uri, ctx.roots, ctx.settings, field=field), field) as src:
        require_georeferenced(src, field)
        crs = CRS.from_wkt(src.crs.to_wkt()) if src.crs else None
        return crs, tuple(src.bounds)


def _mode(layer: RasterLayer, count: int, field: str) -> tuple[str, list[int]]:
    mode = layer.mode
    if mode == "auto":
        mode = (
            "rgb"
            if (layer.bands is not None and len(layer.bands) == 3) or (layer.bands is None and count >= 3)
            else "stretch"
        )
    bands = layer.bands or ([1, 2, 3] if mode == "rgb" else [1])
    check_bands(bands, count, f"{field}.bands")
    return mode, bands


def _window(src_bounds: Box, wanted: Box, transform: object) -> Window | None:
    left, bottom = max(src_bounds[0], wanted[0]), max(src_bounds[1], wanted[1])
    right, top = min(src_bounds[2], wanted[2]), min(src_bounds[3], wanted[3])
    if left >= right or bottom >= top:
        return None
    return from_bounds(left, bottom, right, top, transform=transform)


def _read(layer: RasterLayer, frame: Frame, field: str, ctx: JobContext) -> tuple[np.ndarray | None, dict]:
    """The bands under the frame, warped onto its pixels (NaN where there is no data), and what was read."""
    source = raster_input(layer.uri, ctx.roots, ctx.settings, field=f"{field}.uri")
    with open_raster(source, f"{field}.uri") as src:
        require_georeferenced(src, f"{field}.uri")
        mode, bands = _mode(layer, src.count, field)
        crs = CRS.from_wkt(src.crs.to_wkt()) if src.crs else frame.crs
        said = {"path": str(source), "crs": src.crs.to_string() if src.crs else None, "mode": mode, "bands": bands}
        wanted = transform_bounds(frame.crs, crs, *frame.bounds, densify_pts=21) if crs != frame.crs else frame.bounds
        window = _window(tuple(src.bounds), wanted, src.transform)
        if window is None:
            return None, said
        cols = max(1, min(math.ceil(window.width), OVERSAMPLE * frame.width))
        rows = max(1, min(math.ceil(window.height), OVERSAMPLE * frame.height))
        resampling = Resampling.bilinear if mode == "hillshade" else Resampling.average
        data = src.read(bands, window=window, out_shape=(len(bands), rows, cols), masked=True, resampling=resampling)
        read_transform = src.window_transform(window) * Affine.scale(window.width / cols, window.height / rows)
    pixels = np.ma.filled(data.astype("float32"), np.nan)
    warped = np.full((len(bands), frame.height, frame.width), np.nan, dtype="float32")
    for i in range(len(bands)):
        reproject(
            pixels[i], warped[i], src_transform=read_transform, src_crs=crs, dst_transform=frame.transform,
            dst_crs=frame.crs, src_nodata=np.nan, dst_nodata=np.nan, resampling=Resampling.bilinear,
        )  # fmt: skip
    return (warped if np.isfinite(warped).any() else None), said


def _stretch(band: np.ndarray, percentiles: tuple[float, float]) -> tuple[np.ndarray, float, float]:
    valid = band[np.isfinite(band)]
    lo, hi = (float(v) for v in np.percentile(valid.astype("float64"), percentiles))
    hi = hi if hi > lo else lo + 1.0
    return np.clip((band - lo) / (hi - lo), 0.0, 1.0), lo, hi


def _colour(layer: RasterLayer, warped: np.ndarray, frame: Frame, field: str, drawn: DrawnLayer) -> np.ndarray:
    valid = np.isfinite(warped).all(axis=0)
    rgba = np.zeros((frame.height, frame.width, 4), dtype="float64")
    if drawn.mode == "hillshade":
        z = warped[0].astype("float64")
        xres, yres = pixel_metres(frame.crs, frame.bounds, frame.width, frame.height)
        shade = hillshade(np.where(np.isfinite(z), z, np.nanmean(z)), xres, yres, 315.0, 45.0, 1.0)
        rgba[..., :3] = shade[..., np.newaxis]
    elif drawn.mode == "rgb":
        for i in range(3):
            rgba[..., i], lo, hi = _stretch(warped[i], layer.percentiles)
            drawn.breaks += [lo, hi]
    else:
        ramp = colormap(layer.colormap, f"{field}.colormap")
        scaled, lo, hi = _stretch(warped[0], layer.percentiles)
        rgba[:] = ramp(np.nan_to_num(scaled))
        drawn.breaks = [lo, hi]
        steps = np.linspace(0.0, 1.0, RAMP_STEPS)
        drawn.classes = [
            MapClass(label=f"{lo + s * (hi - lo):.4g}", colour=to_hex(ramp(s)), lower=lo + s * (hi - lo)) for s in steps
        ]
    rgba[..., 3] = np.where(valid, layer.opacity, 0.0)
    return rgba


def raster_picture(layer: RasterLayer, index: int, frame: Frame, ctx: JobContext) -> RasterPicture:
    """Layer `index` read under the frame, warped and coloured.

    Raises:
        JobFailed: a path outside the workspace, an unreadable raster, a band out of range, an unknown colormap
            (each naming `layers[index]`).
    """
    field = f"layers[{index}]"
    if layer.mode != "hillshade" and layer.mode != "rgb":
        colormap(layer.colormap, f"{field}.colormap")
    warped, said = _read(layer, frame, field, ctx)
    drawn = DrawnLayer(kind="raster", drawn=warped is not None, **said)
    if warped is None:
        return RasterPicture(None, drawn)
    return RasterPicture(_colour(layer, warped, frame, field, drawn), drawn)
