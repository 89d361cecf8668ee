"""Vector analysis of whole layers: `vector_overlay` (two layers cut against each other), `vector_dissolve` (features
merged by fields, with aggregates) and `vector_join` (attributes of one layer joined to another by a spatial
predicate or by nearness)."""

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from schemas import routes
from schemas.tools import limits
from schemas.tools.base import Hints, Reprojection, ToolSpec, reprojections_said
from schemas.tools.raster import GeoArgs, Uri
from schemas.tools.vector import VectorResult

FieldName = str
Aggregate = Literal["first", "count", "sum", "mean", "min", "max", "list"]
"""`list` writes the group's values as a JSON array in a text field."""


class LayerWriteArgs(GeoArgs):
    """One input layer and the output every analysis tool writes."""

    uri: Uri
    """Input vector dataset (a workspace path)."""
    layer: str | None = Field(default=None, max_length=256)
    """Layer of `uri`; its first layer when omitted."""
    output: Uri
    """Where to write the result, inside the workspace; missing folders are created there."""
    driver: str | None = Field(default=None, max_length=64)
    """Output driver (GPKG, ESRI Shapefile, GeoJSON, FlatGeobuf, …); inferred from the output's extension."""
    overwrite: bool = False
    """Replace `output` if it exists."""
    make_valid: bool = False
    """Repair invalid geometries (GEOS make-valid, keeping each geometry's dimension) and count them in the result;
    when false an input with invalid geometries is refused with their count."""


class TwoLayerArgs(LayerWriteArgs):
    other: Uri
    """The second vector dataset (a workspace path); moved into the first one's CRS when its CRS differs."""
    other_layer: str | None = Field(default=None, max_length=256)
    """Layer of `other`; its first layer when omitted."""
    suffixes: tuple[str, str] = ("_1", "_2")
    """Added to an attribute name both layers have: the first layer's, the second's."""

    @model_validator(mode="after")
    def _distinct_suffixes(self) -> Self:
        if self.suffixes[0] == self.suffixes[1]:
            raise ValueError("suffixes must differ")
        return self


class VectorOverlayArgs(TwoLayerArgs):
    how: Literal["intersection", "union", "difference", "symmetric_difference", "identity"] = "intersection"
    """intersection: where both are; union: everywhere either is, cut where they overlap; difference: the first
    minus the second; symmetric_difference: where exactly one is; identity: the first, cut by the second."""
    keep_geom_type: bool = True
    """Keep only results of the first layer's geometry dimension (no stray lines or points where polygons touch)."""


class VectorDissolveArgs(LayerWriteArgs):
    by: list[FieldName] = Field(default_factory=list, max_length=32)
    """Fields whose equal values make one feature; none merges the whole layer into one feature."""
    aggregates: dict[FieldName, list[Aggregate]] = Field(default_factory=dict, max_length=256)
    """Per field, the aggregates to write, each as `<field>_<aggregate>` (`pop: ["sum", "max"]` → `pop_sum`,
    `pop_max`). Fields not named here or in `by` are left out."""


class VectorJoinArgs(TwoLayerArgs):
    mode: Literal["predicate", "nearest"] = "predicate"
    """predicate: pair features where `predicate` holds; nearest: pair each feature with its `k` nearest in `other`."""
    predicate: Literal["intersects", "within", "contains", "overlaps", "touches", "crosses", "covers", "dwithin"] = (
        "intersects"
    )
    """The relation of a feature of `uri` to one of `other` (mode predicate); dwithin takes `distance`."""
    distance: float | None = Field(default=None, ge=0)
    """dwithin: the distance, in the first layer's CRS units; nearest: the largest distance searched (none: any)."""
    how: Literal["inner", "left"] = "inner"
    """inner keeps the features of `uri` that matched; left keeps every one, with empty joined fields."""
    aggregates: dict[FieldName, list[Aggregate]] | None = Field(default=None, max_length=256)
    """One feature per feature of `uri`: the matched features of `other` summarised per field as in
    `vector_dissolve` (`<field>_<aggregate>`), plus `join_count`. None: one feature per matched pair."""
    k: int = Field(default=1, ge=1, le=100)
    """nearest: how many nearest features to join (ties at the k-th broken by their order in `other`)."""
    distance_field: str | None = Field(default="distance", min_length=1, max_length=64)
    """nearest: the field that receives the distance to the joined feature (none: no such field)."""

    @model_validator(mode="after")
    def _mode_fits(self) -> Self:
        if self.mode == "predicate" and self.predicate == "dwithin" and self.distance is None:
            raise ValueError("predicate dwithin needs distance")
        if self.mode == "predicate" and self.k != 1:
            raise ValueError("k is for mode nearest")
        return self


class VectorAnalysisResult(VectorResult):
    """What every vector analysis tool reports beside the written layer."""

    input_feature_counts: list[int]
    """Features read from each input: `uri` first, then `other`."""
    repaired: int = 0
    """Invalid input geometries repaired (`make_valid`)."""
    reprojected: list[Reprojection] = Field(default_factory=list)
    """`other`, when it was moved from its CRS into the first layer's; else empty."""
    warnings: list[str] = Field(default_factory=list)

    def summary(self) -> str:
        repaired = f"; {self.repaired} invalid geometries repaired" if self.repaired else ""
        return f"{super().summary()}{repaired}{reprojections_said(self.reprojected)}"


class VectorOverlayResult(VectorAnalysisResult):
    how: str


class VectorDissolveResult(VectorAnalysisResult):
    by: list[str]


class VectorJoinResult(VectorAnalysisResult):
    mode: str
    matched: int
    """Features of `uri` that matched at least one feature of `other`."""


_ALIASES = {"path": "uri", "input": "uri", "dst": "output", "output_path": "output"}


def _spec(
    name: str, title: str, description: str, args: type[GeoArgs], result: type[VectorResult], example: dict[str, Any]
) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        queue=routes.GDAL,
        args=args,
        result=result,
        hints=Hints(destructive=True),
        timeout_s=3600.0,
        aliases=_ALIASES,
        runs_long=True,
        bounds=(limits.LAYER_FEATURES,),
        toolset="vector",
        examples=(example,),
    )


VECTOR_OVERLAY = _spec(
    "vector_overlay",
    "Overlay two vector layers",
    "Cut two layers against each other: intersection, union, difference, symmetric difference or identity, keeping "
    "both layers' attributes. Use it to find where areas overlap or to split one layer by another.",
    VectorOverlayArgs,
    VectorOverlayResult,
    {"uri": "parcels.gpkg", "other": "flood_zones.gpkg", "output": "parcels_flooded.gpkg", "how": "intersection"},
)
VECTOR_DISSOLVE = _spec(
    "vector_dissolve",
    "Dissolve vector features",
    "Merge the features that share the values of some fields (or all of them) into one, with aggregates of the "
    "other fields (first, count, sum, mean, min, max, list). Use it to build regions from parts.",
    VectorDissolveArgs,
    VectorDissolveResult,
    {"uri": "counties.gpkg", "output": "states.gpkg", "by": ["state"], "aggregates": {"pop": ["sum"]}},
)
