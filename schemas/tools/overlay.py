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
    """Repair invalid geometries (counted); false refuses them, with their count."""


class TwoLayerArgs(LayerWriteArgs):
    other: Uri
    """Second vector dataset (a workspace path); reprojected to `uri`'s CRS when it differs."""
    other_layer: str | None = Field(default=None, max_length=256)
    """Layer of `other`; its first layer when omitted."""
    suffixes: list[str] = Field(default=["_1", "_2"], min_length=2, max_length=2)
    """Appended to the attribute names both layers have (`uri`'s, `other`'s)."""

    @model_validator(mode="after")
    def _distinct_suffixes(self) -> Self:
        if self.suffixes[0] == self.suffixes[1]:
            raise ValueError("suffixes must differ")
        return self


class VectorOverlayArgs(TwoLayerArgs):
    how: Literal["intersection", "union", "difference", "symmetric_difference", "identity"] = "intersection"
    """difference: `uri` minus `other`; identity: `uri` cut by `other`; symmetric_difference: where only one is."""
    keep_geom_type: bool = True
    """Keep only results of `uri`'s dimension (no stray edges where polygons touch)."""


class VectorDissolveArgs(LayerWriteArgs):
    by: list[FieldName] = Field(default_factory=list, max_length=32)
    """Fields whose equal values make one feature; none: the whole layer into one."""
    aggregates: dict[FieldName, list[Aggregate]] = Field(default_factory=dict, max_length=256)
    """Per field, aggregates written as `<field>_<aggregate>` (`pop: ["sum"]` → `pop_sum`); other fields are dropped."""


class VectorJoinArgs(TwoLayerArgs):
    mode: Literal["predicate", "nearest"] = "predicate"
    """predicate: pairs where `predicate` holds; nearest: each feature's `k` nearest in `other`."""
    predicate: Literal["intersects", "within", "contains", "overlaps", "touches", "crosses", "covers", "dwithin"] = (
        "intersects"
    )
    """`uri`'s feature in relation to `other`'s; dwithin needs `distance`."""
    distance: float | None = Field(default=None, ge=0)
    """dwithin's distance, or nearest's search limit, in `uri`'s CRS units."""
    how: Literal["inner", "left"] = "inner"
    """inner: matched features only; left: all, unmatched ones with empty joined fields."""
    aggregates: dict[FieldName, list[Aggregate]] | None = Field(default=None, max_length=256)
    """One feature per `uri` feature with `<field>_<aggregate>` of its matches and `join_count`; null: one per pair."""
    k: int = Field(default=1, ge=1, le=100)
    """nearest: how many (ties broken by order in `other`)."""
    distance_field: str | None = Field(default="distance", min_length=1, max_length=64)
    """nearest: the field for the distance (null: none)."""

    @model_validator(mode="after")
    def _mode_fits(self) -> Self:
        if self.mode == "predicate" and self.predicate == "dwithin" and self.distance is None:
            raise ValueError("predicate dwithin needs distance")
        if self.mode == "predicate" and self.k != 1:
            raise ValueError("k is for mode nearest")
        if self.mode == "predicate" and self.predicate != "dwithin" and self.distance is not None:
            raise ValueError("distance is for predicate dwithin or mode nearest")
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
    {"uri": "districts.gpkg", "other": "lakes.gpkg", "output": "district_lakes.gpkg", "how": "intersection"},
)
VECTOR_DISSOLVE = _spec(
    "vector_dissolve",
    "Dissolve vector features",
    "Merge the features that share the values of some fields (or all of them) into one, with aggregates of the "
    "other fields (first, count, sum, mean, min, max, list). Use it to build regions from parts.",
    VectorDissolveArgs,
    VectorDissolveResult,
    {"uri": "districts.gpkg", "output": "region.gpkg", "aggregates": {"name": ["count", "list"]}},
)
VECTOR_JOIN = _spec(
    "vector_join",
    "Join vector layers by location",
    "Join a second layer's attributes to a first by a spatial predicate (within, dwithin …) or the k nearest, "
    "one row per pair or one per feature with aggregates.",
    VectorJoinArgs,
    VectorJoinResult,
    {"uri": "wells.gpkg", "other": "districts.gpkg", "output": "wells_districts.gpkg", "predicate": "within"},
)
