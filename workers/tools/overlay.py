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
from workers.tiling.declare import Plan, tiler
from workers.vector import dissolve, join, overlay, parts
from workers.vector.partition import plan


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


def partitioned_overlay(args: VectorOverlayArgs, ctx: JobContext) -> Plan | None:
    """A large overlay's partitions; its first layer must declare one geometry kind (what a cell keeps)."""
    return plan(args, ctx, needs_kind=True)


def partitioned_join(args: VectorJoinArgs, ctx: JobContext) -> Plan | None:
    """A large join's partitions: runs of the first layer against the whole second when that one is small."""
    return plan(args, ctx, needs_kind=False, broadcast=True)


tiler(VECTOR_OVERLAY, plan=partitioned_overlay, run=parts.run_overlay, assemble=parts.assemble_overlay)
tiler(VECTOR_JOIN, plan=partitioned_join, run=parts.run_join, assemble=parts.assemble_join)
