"""Raster operations: `raster_calc` (band math), `raster_terrain` (hillshade, slope, aspect), `raster_clip` (by
bounds or by a polygon layer) and `raster_mosaic` (several rasters into one): arguments, results and specs. Calc,
terrain and mosaic are per-pixel (terrain with a one-pixel neighbourhood), so they run by tiles when large."""

import math
from typing import Annotated, Any, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from schemas import routes
from schemas.preflight.justification import PreflightSpec
from schemas.tools import limits
from schemas.tools.base import Hints, Reprojection, ToolResult, ToolSpec, reprojections_said
from schemas.tools.expression import parse
from schemas.tools.raster import CrsText, GeoArgs, OutputRef, Uri, WarpResampling

OutputDtype = Literal["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"]
"""Pixel types an analysis output may have."""
OutputCompression = Literal["none", "deflate", "zstd", "lzw"]
"""Lossless GeoTIFF compressions for analysis outputs (`none`: uncompressed, the fastest to write)."""

INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "uint8": (0, 2**8 - 1), "int8": (-(2**7), 2**7 - 1), "uint16": (0, 2**16 - 1), "int16": (-(2**15), 2**15 - 1),
    "uint32": (0, 2**32 - 1), "int32": (-(2**31), 2**31 - 1),
}  # fmt: skip
"""The values each integer output dtype holds."""

InputName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,31}$")]


# --- raster_calc ----------------------------------------------------------------------------------------------


class RasterCalcArgs(GeoArgs):
    inputs: dict[InputName, Uri] = Field(min_length=1, max_length=16)
    """Rasters by the names the expression uses, e.g. {"s": "scene.tif"}; all must share one grid (CRS, transform,
    size)."""
    expression: str = Field(min_length=1, max_length=2000)
    """Band math over the inputs: `name[k]` is band k (1-based) of input `name`, a bare `name` band 1 of a one-band
    input; + - * / ** %, comparisons, & | ~, and element-wise functions (where, sqrt, log, minimum, …). Example:
    `(s[4] - s[3]) / (s[4] + s[3])`. See reference://raster/operations/calc."""
    output: Uri
    """Where to write the one-band GeoTIFF result, inside the workspace; missing folders are created there."""
    dtype: OutputDtype = "float32"
    """Pixel type of the output; values are computed in float64, then rounded and clipped into an integer type."""
    nodata: float | None = None
    """NoData of the output (written where any input band read is nodata, or the result is not finite); default NaN
    for float outputs, the type's lowest value for signed integers, its highest for unsigned ones."""
    compression: OutputCompression = "none"
    overwrite: bool = False
    """Replace `output` if it exists."""

    @field_validator("expression")
    @classmethod
    def _grammar(cls, value: str, info: ValidationInfo) -> str:
        names = set((info.data.get("inputs") or {}).keys())
        if names:  # a bad `inputs` is reported on its own
            parse(value, names)
        return value

    @field_validator("nodata")
    @classmethod
    def _nodata_fits(cls, value: float | None, info: ValidationInfo) -> float | None:
        dtype = info.data.get("dtype")
        if value is None or dtype not in INTEGER_RANGES:
            return value
        low, high = INTEGER_RANGES[dtype]
        if not math.isfinite(value) or value != int(value) or not low <= value <= high:
            raise ValueError(f"{value!r} is not a {dtype} value (a whole number in {low}..{high})")
        return value


class RasterCalcResult(ToolResult):
    output: OutputRef
    expression: str
    bands_read: list[str]
    """The bands the expression reads, as `name[k]`."""
    dtype: str
    nodata: float | Literal["NaN"] | None
    width: int
    height: int
    valid_pixels: int
    """Pixels of the output that are not nodata."""

    def summary(self) -> str:
        return f"{self.expression} → {self.output.path} ({self.dtype}, {self.width}×{self.height})"


# --- raster_terrain -------------------------------------------------------------------------------------------


class RasterTerrainArgs(GeoArgs):
    uri: Uri
    """The elevation model (DEM) (a workspace path)."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; missing folders are created there."""
    product: Literal["hillshade", "slope", "aspect"]
    """hillshade (uint8, 1–255, 0 nodata), slope (float32), or aspect (float32 degrees clockwise from north that the
    slope faces; flat cells are nodata)."""
    band: int = Field(default=1, ge=1)
    """The band that holds elevations."""
    slope_units: Literal["degrees", "percent"] = "degrees"
    """For slope: degrees (0–90) or percent rise (100 × rise / run)."""
    azimuth: float = Field(default=315.0, ge=0.0, le=360.0)
    """For hillshade: direction of the light, degrees clockwise from north."""
    altitude: float = Field(default=45.0, ge=0.0, le=90.0)
    """For hillshade: elevation of the light above the horizon, degrees."""
    z_factor: float = Field(default=1.0, gt=0.0)
    """Multiplies elevations before the gradient (vertical exaggeration, or converting feet to metres: 0.3048)."""
    edges: Literal["nodata", "compute"] = "nodata"
    """Cells on the raster's edge or next to nodata: `nodata` (gdaldem's default) or `compute`, as
    `gdaldem -compute_edges`: past the border the edge is extended linearly, a nodata neighbour takes the centre's
    value."""
    compression: OutputCompression = "none"
    overwrite: bool = False
    """Replace `output` if it exists."""


class RasterTerrainResult(ToolResult):
    output: OutputRef
    product: str
    units: str
    """degrees, percent, or `shade` (hillshade's 1–255)."""
    geographic: bool
    """The DEM is in a geographic CRS: horizontal distances were taken on the ellipsoid, row by row."""
    dtype: str
    nodata: float
    width: int
    height: int
    valid_pixels: int
    """Pixels of the output that are not nodata."""

    def summary(self) -> str:
        return f"{self.product} ({self.units}) → {self.output.path}, {self.width}×{self.height}"


RASTER_CALC = ToolSpec(
    name="raster_calc",
    title="Band math",
    description=(
        "Compute a new raster from bands of one or more aligned rasters with an expression, e.g. NDVI "
        '`(s[4] - s[3]) / (s[4] + s[3])` with inputs {"s": "scene.tif"}. Use it for indices, masks, '
        "thresholds and unit conversions. A pixel that is nodata in any band read is nodata in the output."
    ),
    queue=routes.GDAL,
    args=RasterCalcArgs,
    result=RasterCalcResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"dst": "output", "output_path": "output", "expr": "expression", "formula": "expression"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
    examples=(
        {
            "inputs": {"nir": "s2_b8.tif", "red": "s2_b4.tif"},
            "expression": "(nir - red) / (nir + red)",
            "output": "ndvi.tif",
        },
    ),
)

RASTER_TERRAIN = ToolSpec(
    name="raster_terrain",
    title="Terrain: hillshade, slope, aspect",
    description=(
        "Derive hillshade, slope (degrees or percent) or aspect from an elevation model with Horn's method (as "
        "gdaldem). Use it to see relief or to find steep or sun-facing ground. Geographic DEMs (degrees) are "
        "measured on the ellipsoid row by row; elevations are taken in the same unit as projected distances."
    ),
    queue=routes.GDAL,
    args=RasterTerrainArgs,
    result=RasterTerrainResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"path": "uri", "file": "uri", "input": "uri", "dem": "uri", "dst": "output", "output_path": "output"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
    examples=({"uri": "dem.tif", "output": "slope.tif", "product": "slope"},),
)


# --- raster_clip ----------------------------------------------------------------------------------------------


class RasterClipArgs(GeoArgs):
    uri: Uri
    """Raster to clip (a workspace path)."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; missing folders are created there."""
    bounds: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """Keep [left, bottom, right, top] (in `bounds_crs`, else the raster's CRS): every pixel the box touches, on
    the raster's own grid (nothing is resampled). Give `bounds` or `mask`."""
    bounds_crs: CrsText | None = None
    """The CRS `bounds` are in, when not the raster's (e.g. 'EPSG:4326' for longitudes and latitudes)."""
    mask: Uri | None = None
    """A polygon layer in the workspace (any CRS: it is transformed to the raster's): pixels outside its polygons
    become nodata, and the output is cropped to their extent unless `crop` is false."""
    layer: str | None = Field(default=None, max_length=256)
    """The mask's layer; its first when omitted."""
    all_touched: bool = False
    """With `mask`: keep every pixel a polygon touches, not only those whose centre is inside."""
    crop: bool = True
    """With `mask`: shrink the output to the pixels the polygons' extent (their bounding box) touches."""
    nodata: float | None = None
    """NoData of the output (what masked pixels become); the raster's own, else NaN for floats and 0 for integers."""
    compression: OutputCompression = "none"
    overwrite: bool = False
    """Replace `output` if it exists."""

    @model_validator(mode="after")
    def _one_way_to_clip(self) -> Self:
        if (self.bounds is None) == (self.mask is None):
            raise ValueError("give bounds or mask (one of them)")
        if self.bounds is not None and not (self.bounds[0] < self.bounds[2] and self.bounds[1] < self.bounds[3]):
            raise ValueError("bounds must be [left, bottom, right, top] with left < right and bottom < top")
        if self.bounds_crs is not None and self.bounds is None:
            raise ValueError("bounds_crs goes with bounds")
        return self


class RasterClipResult(ToolResult):
    output: OutputRef
    width: int
    height: int
    bounds: list[float]
    """left, bottom, right, top of the output, in the raster's CRS."""
    transform: list[float]
    valid_pixels: int
    """Pixels of the output's first band that are not nodata."""
    reprojected: list[Reprojection] = Field(default_factory=list)
    """`bounds` (from `bounds_crs`) or the `mask` layer, when transformed into the raster's CRS; else empty."""

    def summary(self) -> str:
        return f"clipped to {self.width}×{self.height}: {self.output.path}{reprojections_said(self.reprojected)}"


# --- raster_mosaic --------------------------------------------------------------------------------------------

MosaicMethod = Literal["first", "last", "min", "max", "mean"]


class RasterMosaicArgs(GeoArgs):
    inputs: list[Uri] = Field(min_length=1, max_length=256)
    """Rasters to merge, in order (`first` and `last` refer to it); all with the same band count."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; missing folders are created there."""
    resampling: WarpResampling
    """How inputs off the first one's grid (another CRS, resolution or alignment) are resampled onto it: nearest
    for categories, bilinear/cubic for continuous data."""
    method: MosaicMethod = "first"
    """Where inputs overlap: the first or last valid value, the lowest, the highest, or the mean of the valid ones."""
    nodata: float | None = None
    """NoData of the output; the first input's, else NaN for floats and 0 for integers."""
    compression: OutputCompression = "none"
    overwrite: bool = False
    """Replace `output` if it exists."""

    @model_validator(mode="before")
    @classmethod
    def _one_input_is_a_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("inputs"), str):
            return {**data, "inputs": [data["inputs"]]}
        return data


class RasterMosaicResult(ToolResult):
    output: OutputRef
    crs: str | None
    width: int
    height: int
    resolution: list[float]
    bounds: list[float]
    """left, bottom, right, top in `crs`."""
    method: str
    resampling: str
    reprojected: list[Reprojection]
    """Inputs that were warped from their CRS onto the first one's on the way (`inputs[i]`); else empty."""

    def summary(self) -> str:
        said = reprojections_said(self.reprojected)
        return f"mosaic of {self.width}×{self.height} ({self.method}) → {self.output.path}{said}"


RASTER_CLIP = ToolSpec(
    name="raster_clip",
    title="Clip a raster",
    description=(
        "Cut a raster to a box (in its CRS or another) or to the polygons of a vector layer (pixels outside become "
        "nodata, cropped to the polygons). Use it to keep only a study area, a watershed or a tile. Pixels are "
        "copied on the raster's own grid, never resampled."
    ),
    queue=routes.GDAL,
    args=RasterClipArgs,
    result=RasterClipResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"path": "uri", "file": "uri", "input": "uri", "dst": "output", "output_path": "output"},
    runs_long=True,
    bounds=(limits.OUTPUT_BYTES,),
    examples=({"uri": "dem.tif", "output": "dem_aoi.tif", "mask": "aoi.gpkg"},),
)

RASTER_MOSAIC = ToolSpec(
    name="raster_mosaic",
    title="Mosaic rasters",
    description=(
        "Merge several rasters into one on the first one's grid (CRS and resolution; others are reprojected on the "
        "fly), with an overlap rule: first, last, min, max or mean. Use it to join adjacent tiles or scenes. "
        "`resampling` decides how inputs off that grid are resampled, so it is justified first (preflight)."
    ),
    queue=routes.GDAL,
    args=RasterMosaicArgs,
    result=RasterMosaicResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"sources": "inputs", "dst": "output", "output_path": "output", "method_overlap": "method"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
    preflight=(PreflightSpec(domain="resampling", prompt="justify_resampling_method", args={"method": "resampling"}),),
    examples=({"inputs": ["tile_a.tif", "tile_b.tif"], "output": "mosaic.tif", "resampling": "nearest"},),
)
