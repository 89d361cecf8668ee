"""The map's frame: its CRS, its extent widened to the frame's shape, where it sits in the picture, and the
matplotlib figure (Agg, no pyplot) whose axes span exactly those pixels."""

from dataclasses import dataclass

from affine import Affine
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from pyproj import CRS
from rasterio.transform import from_bounds

Box = tuple[float, float, float, float]
"""left, bottom, right, top."""

DPI = 100
MARGIN = 8
TITLE_BAND = 34
PAD = 0.03
"""Of the layers' extent, added on each side."""


@dataclass(frozen=True)
class Frame:
    """The map frame: `bounds` in `crs` drawn on the pixels `box` (left, top, right, bottom) of a `size` picture."""

    crs: CRS
    bounds: Box
    box: tuple[int, int, int, int]
    size: tuple[int, int]

    @property
    def width(self) -> int:
        return self.box[2] - self.box[0]

    @property
    def height(self) -> int:
        return self.box[3] - self.box[1]

    @property
    def transform(self) -> Affine:
        """The grid of the frame's pixels in `crs` (what rasters are warped onto)."""
        return from_bounds(*self.bounds, self.width, self.height)

    def pixel(self, x: float, y: float) -> tuple[float, float]:
        """Where map coordinates fall in the picture (column, row; fractional)."""
        left, bottom, right, top = self.bounds
        col = self.box[0] + (x - left) / (right - left) * self.width
        row = self.box[1] + (top - y) / (top - bottom) * self.height
        return col, row


def layout(size: tuple[int, int], title: bool, legend: bool) -> tuple[tuple[int, int, int, int], int]:
    """The map's pixel box in a `size` picture and the legend panel's width (0 without a legend)."""
    width, height = size
    panel = min(240, max(150, round(0.24 * width))) if legend else 0
    top = TITLE_BAND if title else MARGIN
    return (MARGIN, top, width - MARGIN - panel, height - MARGIN), panel


def fitted(extent: Box, box: tuple[int, int, int, int], padded: bool) -> Box:
    """`extent` (padded by `PAD` unless given exactly) widened about its centre to the pixel box's shape."""
    left, bottom, right, top = extent
    span_x, span_y = max(right - left, 1e-9), max(top - bottom, 1e-9)
    if padded:
        pad = PAD * max(span_x, span_y)
        span_x, span_y = span_x + 2 * pad, span_y + 2 * pad
    aspect = (box[2] - box[0]) / (box[3] - box[1])
    if span_x / span_y < aspect:
        span_x = span_y * aspect
    else:
        span_y = span_x / aspect
    cx, cy = (left + right) / 2, (bottom + top) / 2
    return cx - span_x / 2, cy - span_y / 2, cx + span_x / 2, cy + span_y / 2


def figure(frame: Frame) -> tuple[Figure, Axes]:
    """A white figure of the picture's size with axes on exactly the frame's pixels, limits its bounds."""
    width, height = frame.size
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI, facecolor="white")
    FigureCanvasAgg(fig)
    left, top, right, bottom = frame.box
    ax = fig.add_axes((left / width, 1 - bottom / height, (right - left) / width, (bottom - top) / height))
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_linewidth(0.6)
        spine.set_color("#444444")
    limits(ax, frame)
    return fig, ax


def limits(ax: Axes, frame: Frame) -> None:
    """Pin the axes to the frame's bounds and drop axis labels (plotting helpers may have set them)."""
    left, bottom, right, top = frame.bounds
    ax.set_aspect("auto")
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, top)
