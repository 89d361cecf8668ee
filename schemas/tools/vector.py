"""Vector tools: those that write a file (convert, reproject, clip, buffer, simplify) and `vector_info`
(gdal-mcp argument names)."""

from dataclasses import replace
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from schemas import routes
from schemas.preflight.justification import PreflightSpec
from schemas.tools.base import Hints, Reprojection, ToolArgs, ToolResult, ToolSpec, reprojections_said
from schemas.tools.limits import Bound
from schemas.tools.raster import CrsText, GeoArgs, OutputRef, Uri


class VectorWriteArgs(GeoArgs):
    """What every vector tool that writes a file takes."""

    uri: Uri
    """Source vector dataset (a workspace path)."""
    output: Uri
    """Where to write the result, inside the workspace; missing folders are created there."""
    layer: str | None = Field(default=None, max_length=256)
    """Source layer; the first layer when omitted."""
    driver: str | None = Field(default=None, max_length=64)
    """Output driver (GPKG, ESRI Shapefile, FlatGeobuf, Parquet, …); inferred from the output's extension."""
    overwrite: bool = False
    """Replace `output` if it exists."""


class VectorConvertArgs(VectorWriteArgs):
    encoding: str = Field(default="UTF-8", min_length=1, max_length=32)
    """Character encoding of a Shapefile's attributes (other formats are always UTF-8)."""


class VectorReprojectArgs(VectorWriteArgs):
    dst_crs: CrsText
    """Target CRS, e.g. 'EPSG:4326'."""
    src_crs: CrsText | None = None
    """Override (or supply) the source CRS."""


class VectorClipArgs(VectorWriteArgs):
    bounds: list[float] | None = Field(default=None, min_length=4, max_length=4)
    """Clip box [minx, miny, maxx, maxy] in the layer's CRS."""
    mask: str | None = Field(default=None, min_length=1, max_length=1_000_000)
    """Mask polygon(s): a vector file in the workspace, or a WKT / GeoJSON geometry in the layer's CRS."""

    @model_validator(mode="after")
    def _bounds_or_mask(self) -> Self:
        if (self.bounds is None) == (self.mask is None):
            raise ValueError("give exactly one of bounds or mask")
        if self.bounds is not None and not (self.bounds[0] < self.bounds[2] and self.bounds[1] < self.bounds[3]):
            raise ValueError("bounds must be [minx, miny, maxx, maxy] with minx < maxx and miny < maxy")
        return self


class VectorBufferArgs(VectorWriteArgs):
    distance: float
    """Buffer distance in `units`; negative shrinks polygons."""
    units: Literal["metres", "crs"] = "metres"
    """metres on any CRS (geographic too), or the CRS's own units."""
    resolution: int = Field(default=16, ge=4, le=64)
    """Segments per quarter circle."""
    cap_style: Literal["round", "flat", "square"] = "round"
    """Ends of buffered lines."""
    join_style: Literal["round", "mitre", "bevel"] = "round"
    """Corners."""
    mitre_limit: float = Field(default=5.0, gt=0)
    """Longest mitre, as a multiple of the distance."""
    dissolve: bool = False
    """Merge all buffers into one feature without attributes."""

    @model_validator(mode="after")
    def _non_zero(self) -> Self:
        if self.distance == 0:
            raise ValueError("distance must not be 0")
        return self


class VectorSimplifyArgs(VectorWriteArgs):
    tolerance: Annotated[float, Field(ge=0)] = 0.0
    """Douglas–Peucker: largest distance a removed vertex may lie from the line, in CRS units. Visvalingam–Whyatt:
    triangles smaller than tolerance² are removed. 0: only snap to `grid_size`."""
    method: Literal["douglas-peucker", "visvalingam"] = "douglas-peucker"
    preserve_topology: bool = True
    """Keep geometries valid (no self-intersections, no collapsed rings)."""
    grid_size: Annotated[float, Field(gt=0)] | None = None
    """Then snap vertices to a grid of this size (CRS units); results stay valid."""

    @model_validator(mode="after")
    def _something_to_do(self) -> Self:
        if self.tolerance == 0 and self.grid_size is None:
            raise ValueError("give a tolerance > 0, a grid_size, or both")
        return self


class VectorGeometryArgs(VectorWriteArgs):
    operation: Literal["centroid", "representative_point", "convex_hull", "envelope", "make_valid"]
    """representative_point: a point surely inside; envelope: the bounding box; make_valid keeps each geometry's
    dimension."""


class VectorMeasureArgs(VectorWriteArgs):
    """The layer to measure and where to write it with its measures."""


class VectorResult(ToolResult):
    """What every vector tool that writes a file reports."""

    output: OutputRef
    feature_count: int
    geometry_type: str | None = None
    bounds: list[float] | None = None
    """minx, miny, maxx, maxy of the output."""
    crs: str | None = None
    empty_dropped: int = 0
    """Features not written: no or an empty geometry."""
    renamed_fields: dict[str, str] = Field(default_factory=dict)
    """Fields renamed as the format needs (old → new)."""

    def summary(self) -> str:
        said = f"wrote {self.feature_count} {self.geometry_type or ''} features to {self.output.path}"
        if self.empty_dropped:
            said += f"; {self.empty_dropped} without geometry dropped"
        if self.renamed_fields:
            said += "; renamed " + ", ".join(f"{old} → {new}" for old, new in self.renamed_fields.items())
        return said


class VectorConvertResult(VectorResult):
    src_driver: str
    dst_driver: str
    encoding: str


class VectorReprojectResult(VectorResult):
    src_crs: str
    dst_crs: str


class VectorClipResult(VectorResult):
    clip_method: Literal["bbox", "mask"]
    source_feature_count: int
    reprojected: list[Reprojection] = Field(default_factory=list)
    """The mask layer, when it was transformed from its CRS into the layer's before clipping; else empty."""

    def summary(self) -> str:
        return f"{super().summary()}{reprojections_said(self.reprojected)}"


class VectorBufferResult(VectorResult):
    buffer_distance: float
    units: str
    """The distance's unit as applied: `metres`, or the layer's own unit name."""
    resolution: int
    dissolved: bool = False
    warnings: list[str] = Field(default_factory=list)


class VectorSimplifyResult(VectorResult):
    tolerance: float
    method: str
    preserve_topology: bool
    grid_size: float | None = None
    repaired: int = 0
    """Invalid geometries made valid before snapping."""
    vertices_before: int
    vertices_after: int

    def summary(self) -> str:
        return f"{super().summary()}; vertices {self.vertices_before} → {self.vertices_after} ({self.method})"


class VectorGeometryResult(VectorResult):
    operation: str
    repaired: int = 0
    """With make_valid: the geometries that were invalid."""


class VectorMeasureResult(VectorResult):
    fields_added: list[str]
    """area_m2, length_m, perimeter_m (0 where they do not apply); same-named fields replaced."""
    total_area_m2: float
    total_length_m: float


_ALIASES = {"path": "uri", "file": "uri", "input": "uri", "dst": "output", "output_path": "output"}
_WRITES = Hints(destructive=True)


def write_spec(
    name: str,
    title: str,
    description: str,
    args: type[ToolArgs],
    result: type[VectorResult],
    examples: tuple[dict[str, Any], ...] = (),
    *,
    aliases: dict[str, str] = _ALIASES,
    bounds: tuple[Bound, ...] = (),
    toolset: str | None = None,
    tiled: bool = False,
) -> ToolSpec:
    """A vector tool that writes a layer: on the GDAL queue, destructive, long-running (`tiled`: large calls may run
    as partitions across the workers)."""
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        queue=routes.GDAL,
        args=args,
        result=result,
        hints=_WRITES,
        timeout_s=3600.0,
        aliases=aliases,
        runs_long=True,
        bounds=bounds,
        toolset=toolset,
        examples=examples,
        tiled=tiled,
    )


VECTOR_CONVERT = write_spec(
    "vector_convert",
    "Convert a vector dataset",
    "Copy one layer into another format (GeoPackage, Shapefile, GeoJSON, FlatGeobuf, GeoParquet, …; the driver "
    "follows the output's extension unless given). Use it when another program needs a different format or encoding.",
    VectorConvertArgs,
    VectorConvertResult,
    examples=({"uri": "roads.shp", "output": "roads.fgb"},),
)
VECTOR_REPROJECT = replace(
    write_spec(
        "vector_reproject",
        "Reproject a vector dataset",
        "Transform a layer's coordinates into another CRS with PROJ. Use it before overlaying layers in different "
        "CRSs or before measuring distances and areas (pick a projected CRS for that).",
        VectorReprojectArgs,
        VectorReprojectResult,
    ),
    preflight=(PreflightSpec(domain="crs_datum", prompt="justify_crs_selection", args={"dst_crs": "dst_crs"}),),
    examples=({"uri": "roads.gpkg", "output": "roads_utm.gpkg", "dst_crs": "EPSG:32633"},),
)
VECTOR_CLIP = write_spec(
    "vector_clip",
    "Clip a vector dataset",
    "Keep only the features that intersect a box or mask polygon, cut to it. Use it to cut a layer to an area of "
    "interest; the mask may be a file in the workspace or a WKT/GeoJSON geometry.",
    VectorClipArgs,
    VectorClipResult,
    examples=({"uri": "roads.gpkg", "output": "roads_aoi.gpkg", "mask": "aoi.gpkg"},),
)
VECTOR_BUFFER = write_spec(
    "vector_buffer",
    "Buffer vector features",
    "Grow (or, with a negative distance, shrink) every geometry by a distance in metres on any CRS, with cap and "
    "corner styles and an optional dissolve. Use it for proximity zones.",
    VectorBufferArgs,
    VectorBufferResult,
    examples=({"uri": "wells.gpkg", "output": "wells_500m.gpkg", "distance": 500},),
)
VECTOR_SIMPLIFY = write_spec(
    "vector_simplify",
    "Simplify vector geometries",
    "Reduce vertex counts with Douglas–Peucker or Visvalingam–Whyatt, and/or snap vertices to a grid. Use it to "
    "make a layer lighter for display or web maps at a given scale; preserve_topology keeps geometries valid.",
    VectorSimplifyArgs,
    VectorSimplifyResult,
    examples=({"uri": "coast.gpkg", "output": "coast_light.gpkg", "tolerance": 10},),
)

VECTOR_GEOMETRY = write_spec(
    "vector_geometry",
    "Derive geometries",
    "Replace every geometry by its centroid, a point inside it, its convex hull, its bounding box or its valid "
    "repair, attributes kept. Use it for label points, footprints or to fix invalid polygons.",
    VectorGeometryArgs,
    VectorGeometryResult,
    examples=({"uri": "lakes.gpkg", "output": "lake_points.gpkg", "operation": "representative_point"},),
)
VECTOR_MEASURE = write_spec(
    "vector_measure",
    "Measure geometries geodesically",
    "Add each feature's area (m²), length and perimeter (m) measured on the ellipsoid, whatever the CRS. Use it "
    "for true areas and lengths without choosing an equal-area projection.",
    VectorMeasureArgs,
    VectorMeasureResult,
    examples=({"uri": "districts.gpkg", "output": "districts_measured.gpkg"},),
)


# --- vector_info --------------------------------------------------------------------------------------------


class VectorInfoArgs(ToolArgs):
    uri: str = Field(min_length=1, max_length=4096)
    """Path of the vector dataset (a workspace path)."""
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


VECTOR_INFO = ToolSpec(
    name="vector_info",
    title="Vector metadata",
    description=(
        "Read a vector dataset's metadata: driver, layers, CRS, feature count, geometry type, bounds and "
        "attribute fields. Use it first to inspect a vector file before converting, clipping or reprojecting it."
    ),
    queue=routes.GDAL,
    args=VectorInfoArgs,
    result=VectorInfoResult,
    hints=Hints(read_only=True, idempotent=True),
    aliases={"path": "uri", "file": "uri", "input": "uri"},
    examples=({"uri": "roads.gpkg"},),
)
