"""The `map_image` tool: several raster and vector layers drawn into one PNG map (legend, scale bar, north arrow,
title), returned as image content with the numbers it used in the structured result."""

import base64
from typing import Annotated, Literal, Self

from pydantic import Field, PrivateAttr, model_validator

from schemas.content import ContentBlock, ImageBlock
from schemas.tools import limits
from schemas.tools.analysis import READS, RasterUri, analysis_spec
from schemas.tools.base import ToolResult
from schemas.tools.raster import GeoArgs, Uri

MAP_APP_URI = "ui://geogate/map"
"""The MCP App (SEP-1865) a host shows `map_image`'s layers in: an interactive map (`gateway.maps`)."""
MAX_LAYERS = 8
"""Layers one map draws."""
MAX_CLASSES = 12
"""Classes (or categories) one vector layer is coloured by; further categories are drawn as `other`."""

Colour = Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{6}$")]
Opacity = Annotated[float, Field(ge=0, le=1)]
RampName = Annotated[str, Field(min_length=1, max_length=64)]


class RasterLayer(GeoArgs):
    kind: Literal["raster"] = "raster"
    uri: RasterUri
    mode: Literal["auto", "stretch", "hillshade", "rgb"] = "auto"
    """auto: rgb for 3+ bands, else stretch (one band through `colormap`)."""
    bands: list[Annotated[int, Field(ge=1)]] | None = Field(default=None, min_length=1, max_length=3)
    colormap: RampName = "viridis"
    """A matplotlib colormap for a stretch."""
    percentiles: list[Annotated[float, Field(ge=0, le=100)]] = Field(default=[2.0, 98.0], min_length=2, max_length=2)
    """Of the pixels shown: the stretch's ends."""
    opacity: Opacity = 1.0

    @model_validator(mode="after")
    def _sane(self) -> Self:
        if self.percentiles[0] >= self.percentiles[1]:
            raise ValueError("percentiles must be [low, high] with low < high")
        wanted = {"rgb": 3, "stretch": 1, "hillshade": 1}.get(self.mode)
        if wanted is not None and self.bands is not None and len(self.bands) != wanted:
            raise ValueError(f"bands: {self.mode} takes {wanted} band(s)")
        return self


class VectorLayer(GeoArgs):
    kind: Literal["vector"] = "vector"
    uri: Uri
    layer: str | None = None
    field: str | None = None
    """Colour by this field."""
    scheme: Literal["auto", "categories", "quantiles", "natural_breaks", "equal_interval"] = "auto"
    """auto: quantiles for numbers, else categories."""
    classes: int = Field(default=5, ge=2, le=MAX_CLASSES)
    colormap: RampName | None = None
    """Default viridis, or tab10 for categories."""
    fill: Colour = "#78aadc"
    stroke: Colour = "#14285a"
    width: float = Field(default=0.8, ge=0, le=10)
    """Points."""
    opacity: Opacity = 1.0
    label: str | None = None
    """Field to label by, where labels fit."""


MapLayer = Annotated[RasterLayer | VectorLayer, Field(discriminator="kind")]


class MapImageArgs(GeoArgs):
    layers: list[MapLayer] = Field(min_length=1, max_length=MAX_LAYERS)
    """Drawn in this order, the first at the bottom."""
    crs: str | None = None
    """Default: the first layer's."""
    bounds: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """left, bottom, right, top (map CRS); default: all layers."""
    width: int = Field(default=800, ge=200, le=1568)
    height: int = Field(default=600, ge=150, le=1568)
    title: str | None = Field(default=None, max_length=120)
    legend: bool = True
    scale_bar: bool = True
    north_arrow: bool = True

    @model_validator(mode="after")
    def _box(self) -> Self:
        if self.bounds is not None and not (self.bounds[0] < self.bounds[2] and self.bounds[1] < self.bounds[3]):
            raise ValueError("bounds must be [left, bottom, right, top] with left < right and bottom < top")
        return self


class MapClass(ToolResult):
    """One legend entry of a layer."""

    label: str
    colour: str
    """`#rrggbb` as drawn."""
    lower: float | None = None
    """Graduated classes and stretches: the class's lowest value (or the value the colour stands for)."""
    upper: float | None = None
    value: str | None = None
    """A category's value."""
    count: int | None = None
    """Features in the class, among those drawn."""


class DrawnLayer(ToolResult):
    """What one layer contributed to the map."""

    kind: Literal["raster", "vector"]
    path: str
    layer: str | None = None
    crs: str | None
    """The source's CRS (it was reprojected when it differs from the map's)."""
    drawn: bool
    """False when the layer has nothing inside the map's extent (said in `notes` too)."""
    mode: str | None = None
    """A raster's mode (stretch, hillshade, rgb); a vector layer's scheme (single, categories, quantiles, …)."""
    bands: list[int] = Field(default_factory=list)
    field: str | None = None
    breaks: list[float] = Field(default_factory=list)
    """Graduated classes' upper bounds (mapclassify's bins); a stretch's low and high values."""
    classes: list[MapClass] = Field(default_factory=list)
    features: int | None = None
    """Features drawn (those whose boxes meet the extent)."""
    labels: int | None = None
    """Labels drawn; labels that would overlap another or leave the map are skipped."""
    labels_skipped: int | None = None


class ScaleBar(ToolResult):
    length_m: float
    label: str
    pixels: float
    """The bar's length in the picture."""
    metres_per_pixel: float
    """At the map's centre, east-west, measured on the CRS's ellipsoid."""


class MapImageResult(ToolResult):
    width: int
    height: int
    image_bytes: int
    colours: int | None
    """Palette size when the PNG was quantised to fit; None for full colour."""
    reduction: str | None
    """What was given up to fit one image block (colours, pixels); None when nothing was."""
    crs: str
    bounds: list[float]
    """left, bottom, right, top of the map frame in `crs` (the layers' extent widened to the frame's shape)."""
    frame: list[int]
    """The map frame's pixels in the picture: left, top, right, bottom (x right, y down)."""
    layers: list[DrawnLayer]
    scale_bar: ScaleBar | None
    north_deg: float | None
    """True north at the centre, degrees clockwise from the picture's up."""
    notes: list[str]
    _image: bytes = PrivateAttr(default=b"")

    def with_image(self, image: bytes) -> Self:
        self._image = image
        return self

    def blocks(self) -> list[ContentBlock]:
        return [ImageBlock(data=base64.b64encode(self._image).decode("ascii"), mime_type="image/png")]

    def summary(self) -> str:
        drawn = sum(layer.drawn for layer in self.layers)
        reduced = f"; {self.reduction}" if self.reduction else ""
        return f"{self.width}×{self.height} PNG map of {drawn}/{len(self.layers)} layers in {self.crs}{reduced}"


MAP_IMAGE = analysis_spec(
    "map_image",
    "Draw a map",
    "Up to 8 layers drawn in order into one PNG, reprojected to the map's CRS: rasters (RGB, stretch, hillshade), "
    "vectors coloured by a field (categories, quantiles, natural breaks, equal interval), labels, legend, scale bar, "
    "north arrow, title; extent and classes in the result.",
    MapImageArgs,
    MapImageResult,
    READS,
    bounds=(limits.LAYER_FEATURES,),
    app=MAP_APP_URI,
    examples=(
        {
            "layers": [
                {"kind": "raster", "uri": "dem.tif", "mode": "hillshade"},
                {"kind": "vector", "uri": "districts.gpkg", "field": "name", "opacity": 0.5, "label": "name"},
            ],
            "title": "Districts",
        },
    ),
)
