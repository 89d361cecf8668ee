"""`raster_info` and `vector_info`: metadata of one dataset in the workspace (gdal-mcp compatible names)."""

from pydantic import Field

from schemas import tasks
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec


class RasterInfoArgs(ToolArgs):
    uri: str = Field(min_length=1, max_length=4096)
    """Path of the raster, relative to a workspace root (or absolute inside one), or an `https://` URL of a COG on
    a host in `GEOGATE_REMOTE_HOSTS`."""
    band: int | None = Field(default=None, ge=1)
    """Only report this band (1-based)."""


class BandInfo(ToolResult):
    index: int
    dtype: str
    nodata: float | None
    description: str | None = None
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


class VectorInfoArgs(ToolArgs):
    uri: str = Field(min_length=1, max_length=4096)
    """Path of the vector dataset, relative to a workspace root (or absolute inside one)."""
    layer: str | None = None
    """Layer name; the first layer when omitted."""


class FieldInfo(ToolResult):
    name: str
    type: str


class VectorInfoResult(ToolResult):
    path: str
    driver: str
    layer: str
    layers: list[str]
    crs: str | None
    feature_count: int
    geometry_type: str | None
    bounds: list[float] | None
    fields: list[FieldInfo]
    encoding: str | None = None

    def summary(self) -> str:
        return (
            f"{self.driver} layer {self.layer!r}: {self.feature_count} {self.geometry_type or 'non-spatial'} "
            f"features, CRS {self.crs or 'none'}"
        )


RASTER_INFO = ToolSpec(
    name="raster_info",
    title="Raster metadata",
    description=(
        "Read a raster's metadata without loading pixels: driver, size, band count and types, CRS, transform, "
        "bounds, resolution, nodata, overviews. Use it first to inspect a raster before converting or "
        "reprojecting it."
    ),
    queue=tasks.GDAL,
    args=RasterInfoArgs,
    result=RasterInfoResult,
    hints=Hints(read_only=True, idempotent=True),
    aliases={"path": "uri", "file": "uri", "input": "uri"},
)

VECTOR_INFO = ToolSpec(
    name="vector_info",
    title="Vector metadata",
    description=(
        "Read a vector dataset's metadata: driver, layers, CRS, feature count, geometry type, bounds and "
        "attribute fields. Use it first to inspect a vector file before converting, clipping or reprojecting it."
    ),
    queue=tasks.GDAL,
    args=VectorInfoArgs,
    result=VectorInfoResult,
    hints=Hints(read_only=True, idempotent=True),
    aliases={"path": "uri", "file": "uri", "input": "uri"},
)
