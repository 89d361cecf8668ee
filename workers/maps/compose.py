"""Job `map_image`: the map's CRS and extent from the layers' headers, then each layer read under the frame and
drawn in order, labels, legend, scale bar, north arrow and title, encoded as a PNG that fits one image block."""

import math
from dataclasses import dataclass, field

import numpy as np
from matplotlib.transforms import Bbox
from pyproj import CRS
from pyproj.exceptions import ProjError
from rasterio.errors import CRSError
from rasterio.warp import transform_bounds

from schemas.tools.maps import DrawnLayer, MapImageArgs, MapImageResult, RasterLayer
from workers.gdal.errors import parse_crs
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.maps import draw, furniture
from workers.maps.frame import Box, Frame, figure, fitted, layout, limits
from workers.maps.png import Png, encode, pixels, smaller
from workers.maps.rasters import raster_picture, source_bounds
from workers.maps.vectors import Source, VectorPicture, kinds, source, vector_picture

SHRINK_TRIES = 3
"""Times the map is drawn smaller when no palette brings its PNG under the block."""


@dataclass
class Drawing:
    """One rendering: the PNG, the frame and what each layer contributed."""

    png: Png
    frame: Frame
    layers: list[DrawnLayer]
    scale: object
    north: float | None
    notes: list[str] = field(default_factory=list)


def _headers(args: MapImageArgs, ctx: JobContext) -> list[tuple[CRS | None, Box | None, Source | None]]:
    found = []
    for i, layer in enumerate(args.layers):
        if isinstance(layer, RasterLayer):
            crs, box = source_bounds(layer, f"layers[{i}].uri", ctx)
            found.append((crs, box, None))
        else:
            src = source(layer, f"layers[{i}]", ctx)
            found.append((src.crs, src.bounds, src))
    return found


def map_crs(args: MapImageArgs, headers: list[tuple[CRS | None, Box | None, Source | None]]) -> CRS:
    """The CRS asked for, else the first layer's that has one.

    Raises:
        JobFailed: `crs.unknown` (`crs` names none), `crs.missing` (no layer has one and none was asked).
    """
    if args.crs is not None:
        return parse_crs(args.crs, "crs")
    for crs, _, _ in headers:
        if crs is not None:
            return crs
    raise JobFailed("crs.missing", "crs: no layer has a CRS; pass crs to say what the map is drawn in", field="crs")


def extent(args: MapImageArgs, crs: CRS, headers: list[tuple[CRS | None, Box | None, Source | None]]) -> Box:
    """`bounds` as asked, else the union of the layers' bounds moved into the map's CRS.

    Raises:
        JobFailed: `layer.empty` when no layer has an extent there.
    """
    if args.bounds is not None:
        return args.bounds
    boxes = []
    for source_crs, box, _ in headers:
        if box is None:
            continue
        try:
            moved = transform_bounds(source_crs, crs, *box, densify_pts=21) if source_crs and source_crs != crs else box
        except (ProjError, CRSError):
            continue
        if all(math.isfinite(v) for v in moved):
            boxes.append(moved)
    if not boxes:
        raise JobFailed("layer.empty", "layers: no layer has features or pixels to place on the map", field="layers")
    stacked = np.array(boxes)
    return (
        float(stacked[:, 0].min()),
        float(stacked[:, 1].min()),
        float(stacked[:, 2].max()),
        float(stacked[:, 3].max()),
    )


def _geometry(picture: VectorPicture) -> str:
    if picture.frame is None or len(picture.frame) == 0:
        return "area"
    which = kinds(picture.frame.geometry)
    return max(which, key=lambda kind: int(which[kind].sum()))


def render(args: MapImageArgs, crs: CRS, box: Box, headers: list, size: tuple[int, int], ctx: JobContext) -> Drawing:
    """Draw the map at `size` pixels and encode it."""
    pixels_box, panel = layout(size, args.title is not None, args.legend)
    frame = Frame(crs, fitted(box, pixels_box, padded=args.bounds is None), pixels_box, size)
    fig, ax = figure(frame)
    drawn, entries, pictures, notes = [], [], [], []
    for i, layer in enumerate(args.layers):
        ctx.progress(i, len(args.layers) + 1, f"drawing layer {i + 1} of {len(args.layers)}")
        if isinstance(layer, RasterLayer):
            picture = raster_picture(layer, i, frame, ctx)
            if picture.rgba is not None:
                draw.raster(ax, picture.rgba, frame, i + 1)
            entries.append((picture.drawn, "#444444", "area"))
        else:
            picture = vector_picture(layer, i, frame, headers[i][2], ctx)
            draw.vector(ax, picture, layer, i + 1)
            pictures.append((i, picture, layer))
            entries.append((picture.drawn, layer.stroke, _geometry(picture)))
        drawn.append(picture.drawn)
        if not picture.drawn.drawn:
            notes.append(f"layers[{i}] ({layer.uri}) has nothing inside the map's extent: not drawn")
    placed: list[Bbox] = []
    for i, picture, layer in reversed(pictures):  # the top layer's labels are placed first
        drawn[i].labels, drawn[i].labels_skipped = (
            draw.labels(ax, picture, layer, frame, placed) if layer.label else (None, None)
        )
    limits(ax, frame)
    if args.title:
        furniture.title(fig, args.title, frame)
    if args.legend:
        shown = furniture.legend(fig, entries, frame, panel)
        total = sum(1 + len(d.classes) for d, _, _ in entries)
        if shown < total:
            notes.append(f"the legend shows {shown} of its {total} rows: the rest did not fit the picture's height")
    scale = furniture.scale_bar(fig, frame) if args.scale_bar else None
    if args.scale_bar and scale is None:
        notes.append("no scale bar: the map's CRS has no ellipsoid to measure on")
    bearing = furniture.north(frame)
    if args.north_arrow and bearing is not None:
        furniture.north_arrow(fig, frame, bearing)
    return Drawing(encode(pixels(fig)), frame, drawn, scale, bearing, notes)


def map_image(args: MapImageArgs, ctx: JobContext) -> MapImageResult:
    """Draw `args.layers` into one PNG map that fits an image block.

    Raises:
        JobFailed: path, read, band, field and colormap errors naming `layers[i]`; `crs.unknown`, `crs.missing`,
            `layer.empty`, `limit.features`; `map.too_large` when even a smaller drawing does not fit.
        JobCancelled: the call was cancelled.
    """
    headers = _headers(args, ctx)
    crs = map_crs(args, headers)
    box = extent(args, crs, headers)
    size = asked = (args.width, args.height)
    for _ in range(SHRINK_TRIES + 1):
        drawing = render(args, crs, box, headers, size, ctx)
        if drawing.png.fits:
            break
        size = smaller(size, drawing.png)
    else:
        raise JobFailed("map.too_large", "width: the map does not fit an image block even drawn smaller", field="width")
    ctx.progress(1, 1, "rendered")
    return _result(drawing, asked)


def _result(drawing: Drawing, asked: tuple[int, int]) -> MapImageResult:
    frame, png = drawing.frame, drawing.png
    reductions = []
    if png.colours is not None:
        reductions.append(f"quantised to {png.colours} colours to fit the 49 KB an image block holds")
    if frame.size != asked:
        reductions.append(f"asked {asked[0]}×{asked[1]}, drawn {frame.size[0]}×{frame.size[1]} to fit an image block")
    return MapImageResult(
        width=frame.size[0], height=frame.size[1], image_bytes=len(png.data), colours=png.colours,
        reduction="; ".join(reductions) or None, crs=frame.crs.to_string(), bounds=list(frame.bounds),
        frame=list(frame.box), layers=drawing.layers, scale_bar=drawing.scale, north_deg=drawing.north,
        notes=drawing.notes,
    ).with_image(png.data)  # fmt: skip
