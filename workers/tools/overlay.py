"""The vector analysis tools' jobs (`schemas/tools/overlay.py`): overlay, dissolve and spatial joins."""

from schemas.tools.overlay import (
    VECTOR_DISSOLVE,
    VECTOR_JOIN,
    VECTOR_OVERLAY,
    VectorDissolveArgs,
    VectorDissolveResult,
    VectorJoinArgs,
    VectorJoinResult,
    VectorOverlayArgs,
    VectorOverlayResult,
)
from workers.jobkit.context import JobContext
from workers.jobs import job
from workers.vector import dissolve, join, overlay


@job(VECTOR_OVERLAY)
def vector_overlay(args: VectorOverlayArgs, ctx: JobContext) -> VectorOverlayResult:
    """Cut two layers against each other: intersection, union, difference, symmetric difference or identity."""
    return overlay.vector_overlay(args, ctx)


@job(VECTOR_DISSOLVE)
def vector_dissolve(args: VectorDissolveArgs, ctx: JobContext) -> VectorDissolveResult:
    """Merge the features that share the values of `args.by`, with aggregates of other fields."""
    return dissolve.vector_dissolve(args, ctx)


@job(VECTOR_JOIN)
def vector_join(args: VectorJoinArgs, ctx: JobContext) -> VectorJoinResult:
    """Join the attributes of `args.other` to the features of `args.uri` by a spatial predicate or by nearness."""
    return join.vector_join(args, ctx)
