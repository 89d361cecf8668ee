"""Looking at data: `raster_preview` and `vector_preview` (a PNG or JPEG as image content, with the numbers used in the
structured result) and `cog_validate` (the COG layout, with rio-cogeo)."""

import base64
from typing import Annotated, Literal, Self

from pydantic import Field, PrivateAttr, model_validator

from schemas.content import ContentBlock, ImageBlock
from schemas.tools.analysis import READS, RasterUri, analysis_spec
from schemas.tools.base import ToolResult
from schemas.tools.raster import GeoArgs, Uri

# --- cog_validate ---------------------------------------------------------------------------------------------


class CogValidateArgs(GeoArgs):
    uri: RasterUri
    """GeoTIFF to check: a workspace path or an allowed `https://` URL."""
    strict: bool = False
    """Count warnings as errors."""


class CogValidateResult(ToolResult):
    path: str
    valid: bool
    errors: list[str]
    warnings: list[str]
    width: int
    height: int
    blocksize: list[int]
    """[x, y] of band 1's blocks."""
    tiled: bool
    overviews: list[int]
    """Decimation factors of band 1's overviews."""
    compression: str | None

    def summary(self) -> str:
        state = "a valid COG" if self.valid else f"not a valid COG ({len(self.errors)} errors)"
        return f"{self.path}: {state}, {len(self.warnings)} warnings"


# --- raster_preview, vector_preview -------------------------------------------------------------------------------


class PreviewArgs(GeoArgs):
    max_size: int = Field(default=512, ge=16, le=1024)
    """Longest side of the picture in pixels (it keeps the data's aspect). A picture must fit one image block
    (about 49 KB): it is drawn smaller only when no encoding fits, and the result's `reduction` says so."""
    format: Literal["auto", "png", "jpeg"] = "auto"
    """`auto`: PNG (lossless, nodata transparent) when it fits an image block at `max_size`, else JPEG at the
    highest quality that fits; `png`: PNG only, drawn smaller until it fits; `jpeg`: JPEG (nodata white)."""


class RasterPreviewArgs(PreviewArgs):
    uri: RasterUri
    """Raster to show: a workspace path or an allowed `https://` COG URL."""
    mode: Literal["auto", "stretch", "hillshade", "rgb"] = "auto"
    """`stretch`: one band, percentile-stretched and colour-ramped; `hillshade`: one band as a DEM's shaded relief;
    `rgb`: three bands; `auto`: rgb for 3+ bands, else stretch."""
    bands: list[Annotated[int, Field(ge=1)]] | None = Field(default=None, min_length=1, max_length=3)
    """One band (stretch, hillshade) or three (rgb); band 1 or bands 1-3 when omitted."""
    colormap: str = Field(default="viridis", min_length=1, max_length=64)
    """A rio-tiler colormap name (viridis, terrain, gray, rdylgn, …) for one stretched band."""
    percentiles: list[Annotated[float, Field(ge=0, le=100)]] = Field(default_factory=lambda: [2.0, 98.0])
    """Stretch from the first to the second percentile of the valid pixels."""
    azimuth: float = Field(default=315.0, ge=0, le=360)
    """Hillshade: direction of the light, degrees clockwise from north."""
    altitude: float = Field(default=45.0, ge=0, le=90)
    """Hillshade: height of the light above the horizon, degrees."""
    z_factor: float = Field(default=1.0, gt=0)
    """Hillshade: vertical exaggeration."""

    @model_validator(mode="after")
    def _sane(self) -> Self:
        if len(self.percentiles) != 2 or self.percentiles[0] >= self.percentiles[1]:
            raise ValueError("percentiles must be [low, high] with low < high")
        if self.mode == "rgb" and self.bands is not None and len(self.bands) != 3:
            raise ValueError("bands: rgb takes three bands")
        if self.mode in ("stretch", "hillshade") and self.bands is not None and len(self.bands) != 1:
            raise ValueError(f"bands: {self.mode} takes one band")
        return self


class _Picture(ToolResult):
    """A preview's figures; the picture itself is the result's image content."""

    width: int
    height: int
    format: Literal["png", "jpeg"]
    mime_type: str
    image_bytes: int
    quality: int | None
    """The JPEG quality; None for a PNG."""
    asked_size: int
    """The `max_size` asked for."""
    reduction: str | None
    """What was given up to fit one image block (a JPEG instead of the PNG, fewer pixels than asked) and why;
    None when the picture is what was asked."""
    _image: bytes = PrivateAttr(default=b"")

    def with_image(self, image: bytes) -> Self:
        self._image = image
        return self

    def blocks(self) -> list[ContentBlock]:
        return [ImageBlock(data=base64.b64encode(self._image).decode("ascii"), mime_type=self.mime_type)]

    def _reduced(self) -> str:
        return f"; {self.reduction}" if self.reduction else ""


class RasterPreviewResult(_Picture):
    path: str
    mode: Literal["stretch", "hillshade", "rgb"]
    bands: list[int]
    stretch_min: list[float]
    """Per band shown: the value drawn darkest (or first colour); empty for a hillshade."""
    stretch_max: list[float]
    percentiles: list[float]
    colormap: str | None
    """The colour ramp of a one-band stretch; None for rgb and hillshade."""
    source_size: list[int]
    """[width, height] of the raster."""
    crs: str | None
    bounds: list[float]
    """left, bottom, right, top of the picture in the raster's CRS."""
    hillshade: dict[str, float] | None = None
    """azimuth, altitude, z_factor and the pixel size (in metres) used."""

    def summary(self) -> str:
        how = {"stretch": f"{self.colormap} stretch", "hillshade": "hillshade", "rgb": "RGB"}[self.mode]
        picture = f"{self.width}×{self.height} {self.format.upper()}"
        return f"{picture} preview of {self.path} ({how} of bands {self.bands}){self._reduced()}"


class VectorPreviewArgs(PreviewArgs):
    uri: Uri
    """Vector layer to draw, in the workspace."""
    layer: str | None = Field(default=None, max_length=256)
    fill: list[Annotated[int, Field(ge=0, le=255)]] = Field(default_factory=lambda: [120, 170, 220], min_length=3)
    """RGB of polygon interiors."""
    stroke: list[Annotated[int, Field(ge=0, le=255)]] = Field(default_factory=lambda: [20, 40, 90], min_length=3)
    """RGB of lines, points and polygon outlines."""

    @model_validator(mode="after")
    def _rgb(self) -> Self:
        if len(self.fill) != 3 or len(self.stroke) != 3:
            raise ValueError("fill and stroke are [r, g, b]")
        return self


class VectorPreviewResult(_Picture):
    path: str
    layer: str
    feature_count: int
    crs: str | None
    bounds: list[float]
    """minx, miny, maxx, maxy of the layer (what the picture spans)."""

    def summary(self) -> str:
        picture = f"{self.width}×{self.height} {self.format.upper()}"
        return f"{picture} of {self.feature_count} features of {self.path}:{self.layer}{self._reduced()}"


COG_VALIDATE = analysis_spec(
    "cog_validate",
    "Validate a Cloud-Optimised GeoTIFF",
    "Check a GeoTIFF against the COG layout with rio-cogeo: whether it is valid, its errors and warnings, block "
    "size, overviews and compression. Use it before publishing a raster for HTTP range reads.",
    CogValidateArgs,
    CogValidateResult,
    READS,
    examples=({"uri": "dem_cog.tif"},),
)
RASTER_PREVIEW = analysis_spec(
    "raster_preview",
    "Preview a raster",
    "A quicklook of a raster, returned as image content (PNG, or JPEG when the PNG would not fit an image block): "
    "one band percentile-stretched through a colour ramp, a DEM as hillshade, or three bands as RGB, at most "
    "`max_size` pixels a side. The numbers used (stretch range, colormap, size) and any reduction come back in the "
    "structured result. Use it to look at data before or after processing.",
    RasterPreviewArgs,
    RasterPreviewResult,
    READS,
    examples=({"uri": "dem.tif", "mode": "hillshade"},),
)
VECTOR_PREVIEW = analysis_spec(
    "vector_preview",
    "Preview a vector layer",
    "A drawing of a layer's geometries (filled polygons with outlines, lines, points), returned as image content "
    "(PNG, or JPEG when the PNG would not fit), at most `max_size` pixels a side. Use it to look at a layer's shapes "
    "and extent.",
    VectorPreviewArgs,
    VectorPreviewResult,
    READS,
    examples=({"uri": "districts.gpkg"},),
)
