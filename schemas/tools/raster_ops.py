"""Raster analysis tools `raster_calc` (band math) and `raster_terrain` (hillshade, slope, aspect): arguments,
results and specs. Both are per-pixel (terrain with a one-pixel neighbourhood), so both run by tiles when large."""

import math
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from schemas import tasks
from schemas.tools import limits
from schemas.tools.base import Hints, ToolResult, ToolSpec
from schemas.tools.expression import parse
from schemas.tools.raster import GeoArgs, OutputRef, Uri

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
    """Where to write the one-band GeoTIFF result, inside the workspace; its folder must exist."""
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
    """The elevation model (DEM), relative to a workspace root (or absolute inside one)."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; its folder must exist."""
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
    queue=tasks.GDAL,
    args=RasterCalcArgs,
    result=RasterCalcResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"dst": "output", "output_path": "output", "expr": "expression", "formula": "expression"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
)

RASTER_TERRAIN = ToolSpec(
    name="raster_terrain",
    title="Terrain: hillshade, slope, aspect",
    description=(
        "Derive hillshade, slope (degrees or percent) or aspect from an elevation model with Horn's method (as "
        "gdaldem). Use it to see relief or to find steep or sun-facing ground. Geographic DEMs (degrees) are "
        "measured on the ellipsoid row by row; elevations are taken in the same unit as projected distances."
    ),
    queue=tasks.GDAL,
    args=RasterTerrainArgs,
    result=RasterTerrainResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"path": "uri", "file": "uri", "input": "uri", "dem": "uri", "dst": "output", "output_path": "output"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
)
