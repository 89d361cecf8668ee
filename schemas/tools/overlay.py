"""Vector analysis of whole layers: `vector_overlay` (two layers cut against each other), `vector_dissolve` (features
merged by fields, with aggregates) and `vector_join` (attributes of one layer joined to another by a spatial
predicate or by nearness)."""

from typing import Literal, Self

from pydantic import Field, model_validator

from schemas.tools import limits
from schemas.tools.base import Reprojection, reprojections_said
from schemas.tools.raster import GeoArgs, Uri
from schemas.tools.vector import VectorResult, write_spec

FieldName = str
Aggregate = Literal["first", "count", "sum", "mean", "min", "max", "list"]
"""`list` writes the group's values as a JSON array in a text field."""


class LayerWriteArgs(GeoArgs):
    """One input layer and the output every analysis tool writes."""

    uri: Uri
    """Workspace path."""
    layer: str | None = None
    """Default: the first."""
    output: Uri
    """Output path in the workspace."""
    driver: str | None = None
    """Default: from the extension."""
    overwrite: bool = False
    """Replace `output` if it exists."""
    make_valid: bool = False
    """Else invalid geometries are refused."""


class TwoLayerArgs(LayerWriteArgs):
    other: Uri
    """Second layer; reprojected to `uri`'s CRS."""
    other_layer: str | None = None
    """Default: the first."""
    suffixes: list[str] = Field(default=["_1", "_2"])
    """For field names both layers have."""

    @model_validator(mode="after")
    def _distinct_suffixes(self) -> Self:
        if len(self.suffixes) != 2 or self.suffixes[0] == self.suffixes[1]:
            raise ValueError("suffixes must be two different strings")
        return self


class VectorOverlayArgs(TwoLayerArgs):
    how: Literal["intersection", "union", "difference", "symmetric_difference", "identity"] = "intersection"
    """identity: `uri` cut by `other`."""
    keep_geom_type: bool = True
    """Drop results of a lower dimension than `uri`'s."""


class VectorDissolveArgs(LayerWriteArgs):
    by: list[FieldName] = Field(default_factory=list)
    """Group fields (none: one feature)."""
    aggregates: dict[FieldName, list[Aggregate]] = Field(default_factory=dict)
    """Written as `<field>_<aggregate>`; other fields are dropped."""


class VectorJoinArgs(TwoLayerArgs):
    mode: Literal["predicate", "nearest"] = "predicate"
    """nearest: the `k` nearest of `other`."""
    predicate: Literal["intersects", "within", "contains", "overlaps", "touches", "crosses", "covers", "dwithin"] = (
        "intersects"
    )
    """`uri`'s feature to `other`'s."""
    distance: float | None = Field(default=None, ge=0)
    """Metres (geodesic on geographic data): dwithin's, or nearest's limit."""
    how: Literal["inner", "left"] = "inner"
    """left keeps unmatched features."""
    aggregates: dict[FieldName, list[Aggregate]] | None = None
    """One feature per `uri` feature, `<field>_<aggregate>` of its matches and `join_count` (null: per pair)."""
    k: int = Field(default=1, ge=1, le=100)
    """nearest: how many."""
    distance_field: str | None = "distance"
    """nearest: the distance's field (metres)."""

    @model_validator(mode="after")
    def _mode_fits(self) -> Self:
        if self.mode == "predicate" and self.predicate == "dwithin" and self.distance is None:
            raise ValueError("predicate dwithin needs distance")
        if self.mode == "predicate" and self.k != 1:
            raise ValueError("k is for mode nearest")
        if self.distance_field == "":
            raise ValueError("distance_field must not be empty")
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


VECTOR_OVERLAY = write_spec(
    "vector_overlay",
    "Overlay two vector layers",
    "Intersection, union, difference, symmetric difference or identity of two layers, with both layers' attributes.",
    VectorOverlayArgs,
    VectorOverlayResult,
    ({"uri": "districts.gpkg", "other": "lakes.gpkg", "output": "district_lakes.gpkg", "how": "intersection"},),
    aliases=_ALIASES,
    bounds=(limits.LAYER_FEATURES,),
    toolset="vector",
    tiled=True,
)
VECTOR_DISSOLVE = write_spec(
    "vector_dissolve",
    "Dissolve vector features",
    "Merge features by the values of fields (or all into one), with aggregates of other fields.",
    VectorDissolveArgs,
    VectorDissolveResult,
    ({"uri": "districts.gpkg", "output": "region.gpkg", "aggregates": {"name": ["count", "list"]}},),
    aliases=_ALIASES,
    bounds=(limits.LAYER_FEATURES,),
    toolset="vector",
)
VECTOR_JOIN = write_spec(
    "vector_join",
    "Join vector layers by location",
    "Join another layer's attributes by a spatial predicate or the k nearest; per pair or aggregated per feature.",
    VectorJoinArgs,
    VectorJoinResult,
    ({"uri": "wells.gpkg", "other": "districts.gpkg", "output": "wells_districts.gpkg", "predicate": "within"},),
    aliases=_ALIASES,
    bounds=(limits.LAYER_FEATURES,),
    toolset="vector",
    tiled=True,
)
