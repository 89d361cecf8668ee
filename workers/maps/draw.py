"""Putting layers on the map's axes in the order given: rasters as images on the frame's pixels, vector features
(areas filled and outlined, lines stroked, points as discs) and labels placed only where they collide with none."""

import geopandas as gpd
import numpy as np
import shapely
from matplotlib import patheffects
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.transforms import Bbox

from schemas.tools.maps import VectorLayer
from workers.maps.frame import Frame
from workers.maps.vectors import VectorPicture, kinds

LABEL_TRIES = 1000
"""Labels tried per layer; the rest are counted as skipped."""
LABEL_CHARS = 40
LABEL_ZORDER = 1000


def raster(ax: Axes, rgba: np.ndarray, frame: Frame, order: int) -> None:
    left, bottom, right, top = frame.bounds
    ax.imshow(rgba, extent=(left, right, bottom, top), origin="upper", interpolation="nearest", zorder=order)


def vector(ax: Axes, picture: VectorPicture, layer: VectorLayer, order: int) -> None:
    """Draw the layer's features with their class colours: fills at `opacity`, outlines and lines opaque."""
    frame = picture.frame
    if frame is None or len(frame) == 0:
        return
    colours = np.array(picture.colours, dtype=object)
    which = kinds(frame.geometry)
    style = {"ax": ax, "aspect": None, "autolim": False, "zorder": order}
    if which["area"].any():
        faces = [to_rgba(c, layer.opacity) for c in colours[which["area"]]]
        areas = frame.geometry[which["area"]]
        areas.plot(facecolor=faces, edgecolor=layer.stroke, linewidth=layer.width, **style)
    if which["line"].any():
        strokes = list(colours[which["line"]]) if layer.field else layer.stroke
        frame.geometry[which["line"]].plot(color=strokes, linewidth=max(layer.width, 0.5) * 1.5, **style)
    if which["point"].any():
        faces = [to_rgba(c, layer.opacity) for c in colours[which["point"]]]
        points = frame.geometry[which["point"]]
        points.plot(color=faces, edgecolor=layer.stroke, linewidth=layer.width, markersize=30, **style)


def _anchors(geometry: gpd.GeoSeries) -> np.ndarray:
    values = geometry.values.to_numpy()
    which = kinds(geometry)
    anchors = shapely.point_on_surface(values)
    lines = which["line"]
    if lines.any():
        anchors[lines] = shapely.line_interpolate_point(values[lines], 0.5, normalized=True)
    return anchors


def labels(ax: Axes, picture: VectorPicture, layer: VectorLayer, frame: Frame, placed: list[Bbox]) -> tuple[int, int]:
    """Label features by `layer.label` in feature order, skipping a label that would overlap one in `placed` (the
    labels of every layer so far, which this extends) or leave the frame; returns (drawn, skipped)."""
    features = picture.frame
    if layer.label is None or features is None or len(features) == 0:
        return 0, 0
    renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    inside = ax.get_window_extent(renderer)
    drawn = skipped = 0
    left, bottom, right, top = frame.bounds
    points = kinds(features.geometry)["point"]  # a point's label sits above it, not over its disc
    for i, (anchor, value) in enumerate(zip(_anchors(features.geometry), features[layer.label], strict=True)):
        if i >= LABEL_TRIES:
            skipped += len(features) - i
            break
        if value is None or (isinstance(value, float) and np.isnan(value)) or anchor is None:
            continue
        x, y = anchor.x, anchor.y
        if not (left <= x <= right and bottom <= y <= top):
            continue
        text = ax.annotate(
            str(value)[:LABEL_CHARS], (x, y), xytext=(0, 6 if points[i] else 0), textcoords="offset points",
            fontsize=8, ha="center", va="bottom" if points[i] else "center", zorder=LABEL_ZORDER, color="#111111",
            path_effects=[patheffects.withStroke(linewidth=2.5, foreground="white")],
        )  # fmt: skip
        box = text.get_window_extent(renderer).expanded(1.05, 1.1)
        if (
            not inside.contains(box.x0, box.y0)
            or not inside.contains(box.x1, box.y1)
            or any(box.overlaps(b) for b in placed)
        ):
            text.remove()
            skipped += 1
            continue
        placed.append(box)
        drawn += 1
    return drawn, skipped
