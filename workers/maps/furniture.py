"""A map's furniture: the title, the legend in a panel right of the frame, a scale bar true at the frame's centre
and a north arrow pointing to true north there.

The scale bar's length is measured on the CRS's ellipsoid (pyproj `Geod`): the frame's centre and two points a
hundredth of its width east and west of it are taken to longitude and latitude, and the geodesic distance between
those, over their distance in map units, is the metres per map unit east-west at the centre. That holds for any
CRS: degrees of a geographic one, a Mercator's growing scale, a UTM zone's scale factor.
"""

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrow, Patch, Rectangle
from matplotlib.transforms import IdentityTransform
from pyproj import CRS, Transformer
from pyproj.exceptions import ProjError

from schemas.tools.maps import DrawnLayer, ScaleBar
from workers.maps.frame import MARGIN, TITLE_BAND, Frame

ROW_PIXELS = 15
"""Height of one legend row at its font size."""


def title(fig: Figure, text: str, frame: Frame) -> None:
    fig.text(0.5, 1 - (TITLE_BAND / 2) / frame.size[1], text, ha="center", va="center", fontsize=13, weight="bold")


def _handle(drawn: DrawnLayer, colour: str, stroke: str, geometry: str) -> Patch | Line2D:
    if geometry == "line":
        return Line2D([], [], color=colour, linewidth=2)
    if geometry == "point":
        return Line2D([], [], marker="o", linestyle="", markerfacecolor=colour, markeredgecolor=stroke, markersize=7)
    return Patch(facecolor=colour, edgecolor=stroke if drawn.kind == "vector" else colour, linewidth=0.6)


def legend(fig: Figure, entries: list[tuple[DrawnLayer, str, str]], frame: Frame, panel: int) -> int:
    """The legend in the panel: each layer's name, then its classes, top layer first; returns the entries shown
    (those that fit the panel's height)."""
    handles, names = [], []
    for drawn, stroke, geometry in reversed(entries):
        heading = drawn.layer or drawn.path.rsplit("/", 1)[-1]
        handles.append(Patch(visible=False))
        names.append(
            f"{heading}"
            + (f" ({drawn.mode})" if drawn.kind == "raster" else f" · {drawn.field}" if drawn.field else "")
        )
        for entry in drawn.classes:
            handles.append(_handle(drawn, entry.colour, stroke, geometry))
            names.append(entry.label if len(entry.label) <= 28 else entry.label[:27] + "…")
    width, height = frame.size
    rows = max(1, (height - frame.box[1] - MARGIN) // ROW_PIXELS)
    shown = min(len(handles), rows)
    if shown:
        left = (width - panel + 4) / width
        top = 1 - frame.box[1] / height
        fig.legend(
            handles[:shown], names[:shown], loc="upper left", bbox_to_anchor=(left, top), frameon=False, fontsize=8,
            handlelength=1.6, borderaxespad=0.0, labelspacing=0.45,
        )  # fmt: skip
    return shown


def _geodetic(crs: CRS) -> Transformer | None:
    try:
        return Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True) if crs.geodetic_crs else None
    except ProjError:
        return None


def metres_per_unit(frame: Frame) -> float | None:
    """Metres per map unit east-west at the frame's centre, on the CRS's ellipsoid; None without one."""
    to_lonlat = _geodetic(frame.crs)
    if to_lonlat is None:
        return None
    left, bottom, right, top = frame.bounds
    cx, cy, step = (left + right) / 2, (bottom + top) / 2, (right - left) / 100
    (lon1, lon2), (lat1, lat2) = to_lonlat.transform([cx - step, cx + step], [cy, cy])
    if not all(math.isfinite(v) for v in (lon1, lon2, lat1, lat2)):
        return None
    geod = frame.crs.get_geod()
    return geod.inv(lon1, lat1, lon2, lat2)[2] / (2 * step) if geod is not None else None


def _nice(metres: float) -> float:
    power = 10 ** math.floor(math.log10(metres))
    return max(m * power for m in (1, 2, 5) if m * power <= metres)


def _say(metres: float) -> str:
    return f"{metres / 1000:g} km" if metres >= 1000 else f"{metres:g} m"


def scale_bar(fig: Figure, frame: Frame) -> ScaleBar | None:
    """A bar about a fifth of the frame wide, of a round length, in its lower left corner; None when the CRS has
    no ellipsoid to measure on."""
    per_unit = metres_per_unit(frame)
    if per_unit is None or per_unit <= 0:
        return None
    per_pixel = per_unit * (frame.bounds[2] - frame.bounds[0]) / frame.width
    metres = _nice(0.2 * frame.width * per_pixel)
    pixels = metres / per_pixel
    x, y = frame.box[0] + 12, frame.size[1] - frame.box[3] + 12  # display pixels count from the bottom
    identity = IdentityTransform()
    fig.add_artist(
        Rectangle((x - 6, y - 5), pixels + 12, 28, transform=identity, facecolor="white", alpha=0.75, linewidth=0)
    )
    for half in range(2):
        colour = "#222222" if half == 0 else "white"
        part = Rectangle(
            (x + half * pixels / 2, y),
            pixels / 2,
            5,
            transform=identity,
            facecolor=colour,
            edgecolor="#222222",
            linewidth=0.8,
        )
        fig.add_artist(part)
    fig.text(x + pixels / 2, y + 8, _say(metres), transform=identity, ha="center", va="bottom", fontsize=8)
    return ScaleBar(length_m=metres, label=_say(metres), pixels=pixels, metres_per_pixel=per_pixel)


def north(frame: Frame) -> float | None:
    """True north at the frame's centre, degrees clockwise from the picture's up; None when it cannot be known."""
    to_lonlat = _geodetic(frame.crs)
    if to_lonlat is None:
        return None
    left, bottom, right, top = frame.bounds
    cx, cy = (left + right) / 2, (bottom + top) / 2
    lon, lat = to_lonlat.transform(cx, cy)
    step = -0.01 if lat > 89.9 else 0.01
    x, y = to_lonlat.transform(lon, lat + step, direction="INVERSE")
    dx, dy = (x - cx) * math.copysign(1, step), (y - cy) * math.copysign(1, step)
    if not (math.isfinite(dx) and math.isfinite(dy)) or dx == dy == 0:
        return None
    xscale, yscale = frame.width / (right - left), frame.height / (top - bottom)
    return math.degrees(math.atan2(dx * xscale, dy * yscale))


def north_arrow(fig: Figure, frame: Frame, degrees: float) -> None:
    length, identity = 26.0, IdentityTransform()
    cx, cy = frame.box[2] - 22, frame.size[1] - frame.box[1] - 46
    dx, dy = length * math.sin(math.radians(degrees)), length * math.cos(math.radians(degrees))
    fig.add_artist(
        Rectangle((cx - 14, cy - 18), 28, 52, transform=identity, facecolor="white", alpha=0.75, linewidth=0)
    )
    arrow = FancyArrow(
        cx - dx / 2,
        cy - dy / 2,
        dx,
        dy,
        width=2.5,
        head_width=10,
        head_length=10,
        length_includes_head=True,
        transform=identity,
        color="#222222",
    )
    fig.add_artist(arrow)
    fig.text(
        cx + dx * 0.75, cy + dy * 0.75 + 4, "N", transform=identity, ha="center", va="bottom", fontsize=9, weight="bold"
    )
