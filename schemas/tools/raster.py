"""Raster tools `raster_convert`, `raster_reproject`, `raster_stats`, `raster_info`: arguments, results and specs
(gdal-mcp names)."""

from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, model_validator
from pyproj import CRS
from pyproj.exceptions import CRSError

from schemas import routes
from schemas.preflight.justification import PreflightSpec
from schemas.tools import limits
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec


def _known_crs(value: str) -> str:
    # pyproj only (no GDAL), so the gateway can refuse an unknown CRS before anything is queued
    try:
        CRS.from_user_input(value)
    except CRSError as exc:
        raise ValueError(f"{value!r} is not a CRS PROJ knows (try 'EPSG:4326' or 'EPSG:3857')") from exc
    return value


CrsText = Annotated[str, Field(min_length=1, max_length=20_000), AfterValidator(_known_crs)]
"""A CRS as `EPSG:code`, `authority:code`, a PROJ string or WKT; checked with pyproj."""


class Resampling(StrEnum):
    """rasterio's `Resampling` names (a test keeps the two in step)."""

    nearest = "nearest"
    bilinear = "bilinear"
    cubic = "cubic"
    cubic_spline = "cubic_spline"
    lanczos = "lanczos"
    average = "average"
    mode = "mode"
    gauss = "gauss"
    max = "max"
    min = "min"
    med = "med"
    q1 = "q1"
    q3 = "q3"
    sum = "sum"
    rms = "rms"


def _warp_method(value: object) -> object:
    """Case-insensitive names; `gauss` exists for overviews only, GDAL's warper has no such kernel."""
    name = value.casefold() if isinstance(value, str) else value
    if name == Resampling.gauss:
        valid = ", ".join(m.value for m in Resampling if m is not Resampling.gauss)
        raise ValueError(f"gauss is an overview method, not a warp method; use one of {valid}")
    return name


WarpResampling = Annotated[Resampling, BeforeValidator(_warp_method)]
"""A resampling method GDAL's warper supports."""

Compression = Literal[
    "jpeg", "lzw", "packbits", "deflate", "ccittrle", "ccittfax3", "ccittfax4", "lzma", "none", "zstd", "lerc",
    "lerc_deflate", "lerc_zstd", "webp", "jpeg2000",
]  # fmt: skip
"""GDAL TIFF/COG compression names, lower case as in gdal-mcp."""

Uri = Annotated[str, Field(min_length=1, max_length=4096)]


class GeoArgs(ToolArgs):
    """Base of the raster and vector tool arguments: field docstrings become schema descriptions."""

    model_config = ConfigDict(use_attribute_docstrings=True)


def lift_nested(data: Any, key: str) -> Any:
    """Merge gdal-mcp's nested object (`options` / `params`) into the top-level arguments.

    A value given both nested and at the top level must agree.
    """
    if not isinstance(data, dict) or not isinstance(data.get(key), dict):
        return data
    flat, nested = dict(data), data[key]
    del flat[key]
    for name, value in nested.items():
        if name in flat and flat[name] != value:
            raise ValueError(f"{name!r} is given both in {key!r} and at the top level, with different values")
        flat[name] = value
    return flat


class OutputRef(ToolResult):
    """A file a job wrote: where it is, how big, its digest, the GDAL driver that wrote it."""

    uri: str
    """`file://` URI of the output."""
    path: str
    size: int
    sha256: str
    driver: str


# --- raster_convert -------------------------------------------------------------------------------------------


class RasterConvertArgs(GeoArgs):
    uri: Uri
    """Source raster (a workspace path)."""
    output: Uri
    """Where to write the result, inside the workspace; missing folders are created there."""
    driver: str = Field(default="GTiff", min_length=1, max_length=64)
    """Output GDAL driver: GTiff, COG, PNG, JPEG, …"""
    compression: Compression | None = None
    """Compression (GTiff/COG): deflate and zstd are lossless, jpeg/webp lossy (8-bit only)."""
    tiled: bool = True
    """Write tiles rather than strips (GTiff)."""
    blockxsize: int = Field(default=256, ge=16, le=4096, multiple_of=16)
    blockysize: int = Field(default=256, ge=16, le=4096, multiple_of=16)
    photometric: str | None = Field(default=None, max_length=32)
    """Photometric interpretation (RGB, YCBCR, MINISBLACK, …)."""
    overviews: list[Annotated[int, Field(ge=2, le=4096)]] = Field(default_factory=list, max_length=16)
    """Overview decimation factors to build, e.g. [2, 4, 8, 16]."""
    overview_resampling: Resampling = Resampling.average
    creation_options: dict[str, str | int | float] = Field(default_factory=dict)
    """Extra driver creation options, passed to GDAL as given."""
    overwrite: bool = False
    """Replace `output` if it exists."""

    @model_validator(mode="before")
    @classmethod
    def _gdal_mcp_options(cls, data: Any) -> Any:
        return lift_nested(data, "options")


class RasterConvertResult(ToolResult):
    output: OutputRef
    driver: str
    compression: str | None
    size_bytes: int
    overviews_built: list[int]

    def summary(self) -> str:
        extra = f", overviews {self.overviews_built}" if self.overviews_built else ""
        return f"wrote {self.output.path} ({self.driver}, {self.compression or 'uncompressed'}{extra})"


# --- raster_reproject -----------------------------------------------------------------------------------------


class RasterReprojectArgs(GeoArgs):
    uri: Uri
    """Source raster (a workspace path)."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; missing folders are created there."""
    dst_crs: CrsText
    """Target CRS, e.g. 'EPSG:3857'."""
    resampling: WarpResampling
    """nearest for categories (land cover), bilinear/cubic for continuous data (elevation), average to reduce."""
    src_crs: CrsText | None = None
    """Override (or supply) the source CRS."""
    resolution: list[Annotated[float, Field(gt=0)]] | None = Field(default=None, min_length=2, max_length=2)
    """Output pixel size [x, y] in target CRS units; not with width/height."""
    width: int | None = Field(default=None, ge=1, le=200_000)
    height: int | None = Field(default=None, ge=1, le=200_000)
    bounds: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """Output extent [left, bottom, right, top] in the target CRS."""
    nodata: float | None = None
    """NoData of the output; the source's when omitted."""
    overwrite: bool = False
    """Replace `output` if it exists."""

    @model_validator(mode="after")
    def _one_way_to_size(self) -> Self:
        if (self.width is None) != (self.height is None):
            raise ValueError("width and height go together: give both or neither")
        if self.resolution is not None and self.width is not None:
            raise ValueError("give resolution or width/height, not both")
        if self.bounds is not None and not (self.bounds[0] < self.bounds[2] and self.bounds[1] < self.bounds[3]):
            raise ValueError("bounds must be [left, bottom, right, top] with left < right and bottom < top")
        return self


class RasterReprojectResult(ToolResult):
    output: OutputRef
    src_crs: str
    dst_crs: str
    resampling: str
    transform: list[float]
    """Affine transform (a, b, c, d, e, f) of the output."""
    width: int
    height: int
    bounds: list[float]
    """left, bottom, right, top in `dst_crs`."""

    def summary(self) -> str:
        return f"reprojected to {self.dst_crs} ({self.resampling}): {self.width}×{self.height}, {self.output.path}"


# --- raster_stats ---------------------------------------------------------------------------------------------


class RasterStatsArgs(GeoArgs):
    uri: Uri
    """Raster to summarise (a workspace path)."""
    bands: list[Annotated[int, Field(ge=1)]] | None = Field(default=None, min_length=1)
    """Bands (1-based); all when omitted."""
    include_histogram: bool = False
    histogram_bins: int = Field(default=256, ge=2, le=1024)
    percentiles: list[Annotated[float, Field(ge=0, le=100)]] = Field(default_factory=lambda: [25.0, 50.0, 75.0])
    sample_size: int | None = Field(default=None, ge=1000)
    """Compute from this many evenly spaced valid pixels per band instead of all of them."""

    @model_validator(mode="before")
    @classmethod
    def _gdal_mcp_params(cls, data: Any) -> Any:
        return lift_nested(data, "params")


class HistogramBin(ToolResult):
    min_value: float
    max_value: float
    count: int


class BandStats(ToolResult):
    band: int
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    """Population standard deviation (ddof=0)."""
    median: float | None = None
    percentile_25: float | None = None
    percentile_75: float | None = None
    percentiles: dict[str, float] = Field(default_factory=dict)
    """Requested percentile (as text, e.g. '90.0') → value."""
    valid_count: int
    nodata_count: int
    histogram: list[HistogramBin] = Field(default_factory=list)


class RasterStatsResult(ToolResult):
    path: str
    band_stats: list[BandStats]
    total_pixels: int
    """Pixels per band."""
    sampled: bool = False

    def summary(self) -> str:
        parts = [f"b{s.band} min {s.min:g} max {s.max:g} mean {s.mean:g}" for s in self.band_stats if s.valid_count]
        return f"{self.total_pixels} px/band: " + ("; ".join(parts) or "no valid pixels")


_ALIASES = {"path": "uri", "file": "uri", "input": "uri", "dst": "output", "output_path": "output"}

RASTER_CONVERT = ToolSpec(
    name="raster_convert",
    title="Convert a raster",
    description=(
        "Copy a raster into another format or layout: GeoTIFF/COG/PNG/JPEG, compression, tiling and block size, "
        "overviews. Use it to make a raster smaller, cloud-optimised or readable by another program; pixels and "
        "georeferencing are kept. gdal-mcp's nested `options` object is accepted too."
    ),
    queue=routes.GDAL,
    args=RasterConvertArgs,
    result=RasterConvertResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases=_ALIASES,
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
    examples=({"uri": "dem.tif", "output": "dem_cog.tif", "driver": "COG", "compression": "deflate"},),
)

RASTER_REPROJECT = ToolSpec(
    name="raster_reproject",
    title="Reproject a raster",
    description=(
        "Warp a raster into another CRS (GDAL warp), optionally to a given resolution, size or extent. Use it "
        "when layers must share a CRS or grid; choose `resampling` by data kind (nearest for categories, "
        "bilinear/cubic for continuous values). Writes a tiled GeoTIFF."
    ),
    queue=routes.GDAL,
    args=RasterReprojectArgs,
    result=RasterReprojectResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases=_ALIASES | {"crs": "dst_crs", "method": "resampling"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
    preflight=(
        PreflightSpec(domain="crs_datum", prompt="justify_crs_selection", args={"dst_crs": "dst_crs"}),
        PreflightSpec(domain="resampling", prompt="justify_resampling_method", args={"method": "resampling"}),
    ),
    examples=({"uri": "dem.tif", "output": "dem_3857.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"},),
)

RASTER_STATS = ToolSpec(
    name="raster_stats",
    title="Raster statistics",
    description=(
        "Compute per-band min, max, mean, standard deviation, median, percentiles and optionally a histogram, "
        "ignoring nodata. Use it to understand value ranges before styling, classifying or choosing nodata. "
        "gdal-mcp's nested `params` object is accepted too."
    ),
    queue=routes.GDAL,
    args=RasterStatsArgs,
    result=RasterStatsResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=1800.0,
    aliases={"path": "uri", "file": "uri", "input": "uri"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.READ_BYTES),
    examples=({"uri": "dem.tif", "percentiles": [5, 50, 95]},),
)


# --- raster_info --------------------------------------------------------------------------------------------


class RasterInfoArgs(ToolArgs):
    uri: str = Field(min_length=1, max_length=4096)
    """Path of the raster (a workspace path), or an `https://` URL of a COG on
    a host in `GEOGATE_REMOTE_HOSTS`."""
    band: int | None = Field(default=None, ge=1)
    """Only report this band (1-based)."""


class BandInfo(ToolResult):
    index: int
    dtype: str
    nodata: float | None
    description: str | None = None
    color_interp: str
    """What the band's values stand for, as GDAL records it: `gray`, `red`, `green`, `blue`, `alpha`, `palette`
    (indexes into a colour table), `undefined`, …"""
    block_shape: list[int]
    overview_factors: list[int] = Field(default_factory=list)


class RasterInfoResult(ToolResult):
    path: str
    driver: str
    crs: str | None
    width: int
    height: int
    count: int
    dtype: str
    transform: list[float]
    """Affine transform (a, b, c, d, e, f)."""
    bounds: list[float]
    """left, bottom, right, top in the raster's CRS."""
    resolution: list[float]
    nodata: float | None
    overview_levels: list[int]
    bands: list[BandInfo]
    tags: dict[str, str] = Field(default_factory=dict)

    def summary(self) -> str:
        return f"{self.driver} {self.width}×{self.height}×{self.count} {self.dtype}, CRS {self.crs or 'none'}"


RASTER_INFO = ToolSpec(
    name="raster_info",
    title="Raster metadata",
    description=(
        "Read a raster's metadata without loading pixels: driver, size, band count and types, CRS, transform, "
        "bounds, resolution, nodata, overviews. Use it first to inspect a raster before converting or "
        "reprojecting it."
    ),
    queue=routes.GDAL,
    args=RasterInfoArgs,
    result=RasterInfoResult,
    hints=Hints(read_only=True, idempotent=True),
    aliases={"path": "uri", "file": "uri", "input": "uri"},
    examples=({"uri": "dem.tif"},),
)
