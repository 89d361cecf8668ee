"""Raster tools `raster_clip` (by bounds or by a polygon layer) and `raster_mosaic` (several rasters into one):
arguments, results and specs."""

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from schemas import tasks
from schemas.preflight.justification import PreflightSpec
from schemas.tools import limits
from schemas.tools.base import Hints, ToolResult, ToolSpec
from schemas.tools.raster import CrsText, GeoArgs, OutputRef, Uri, WarpResampling
from schemas.tools.raster_ops import OutputCompression

# --- raster_clip ----------------------------------------------------------------------------------------------


class RasterClipArgs(GeoArgs):
    uri: Uri
    """Raster to clip, relative to a workspace root (or absolute inside one)."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; its folder must exist."""
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

    def summary(self) -> str:
        return f"clipped to {self.width}×{self.height}: {self.output.path}"


# --- raster_mosaic --------------------------------------------------------------------------------------------

MosaicMethod = Literal["first", "last", "min", "max", "mean"]


class RasterMosaicArgs(GeoArgs):
    inputs: list[Uri] = Field(min_length=1, max_length=256)
    """Rasters to merge, in order (`first` and `last` refer to it); all with the same band count."""
    output: Uri
    """Where to write the GeoTIFF result, inside the workspace; its folder must exist."""
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
    warped: list[str]
    """Inputs that were reprojected onto the first one's CRS on the way."""

    def summary(self) -> str:
        return f"mosaic of {self.width}×{self.height} ({self.method}) → {self.output.path}"


RASTER_CLIP = ToolSpec(
    name="raster_clip",
    title="Clip a raster",
    description=(
        "Cut a raster to a box (in its CRS or another) or to the polygons of a vector layer (pixels outside become "
        "nodata, cropped to the polygons). Use it to keep only a study area, a watershed or a tile. Pixels are "
        "copied on the raster's own grid, never resampled."
    ),
    queue=tasks.GDAL,
    args=RasterClipArgs,
    result=RasterClipResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"path": "uri", "file": "uri", "input": "uri", "dst": "output", "output_path": "output"},
    runs_long=True,
    bounds=(limits.OUTPUT_BYTES,),
)

RASTER_MOSAIC = ToolSpec(
    name="raster_mosaic",
    title="Mosaic rasters",
    description=(
        "Merge several rasters into one on the first one's grid (CRS and resolution; others are reprojected on the "
        "fly), with an overlap rule: first, last, min, max or mean. Use it to join adjacent tiles or scenes. "
        "`resampling` decides how inputs off that grid are resampled, so it is justified first (preflight)."
    ),
    queue=tasks.GDAL,
    args=RasterMosaicArgs,
    result=RasterMosaicResult,
    hints=Hints(destructive=True),
    timeout_s=3600.0,
    aliases={"sources": "inputs", "dst": "output", "output_path": "output", "method_overlap": "method"},
    tiled=True,
    runs_long=True,
    bounds=(limits.TILES, limits.OUTPUT_BYTES),
    preflight=(PreflightSpec(domain="resampling", prompt="justify_resampling_method", args={"method": "resampling"}),),
)
