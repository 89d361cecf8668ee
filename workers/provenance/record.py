"""The `provenance` job: a workspace file's lineage from the log, as PROV-JSON, with the drift of its files."""

import json
from pathlib import Path

from geogate.calls.lineage import lineage
from geogate.calls.prov_json import drift, prov_document
from geogate.calls.store import EventStore
from schemas.tools.provenance import ProvenanceArgs, ProvenanceResult
from workers.jobkit.confine import pinned
from workers.jobkit.context import JobContext
from workers.jobkit.digests import current_digest
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import atomic_output, output_path, resolve_in_workspace

BESIDE = ".prov.json"
"""The suffix of the record written beside its file (`write_beside`)."""


def store_of(ctx: JobContext) -> EventStore:
    """The job's event store.

    Raises:
        JobFailed: `provenance.no_log`: the job runs without one (only a unit test's context has none).
    """
    if ctx.store is None:
        raise JobFailed("provenance.no_log", "provenance is read from the event log, and this worker has none")
    return ctx.store


def record(args: ProvenanceArgs, ctx: JobContext) -> ProvenanceResult:
    """The lineage of `args.path` (which may be gone: its record is in the log), its PROV-JSON and its drift.

    Raises:
        JobFailed: the path is outside the workspace (`path.*`), or the record cannot be written beside it.
    """
    path = resolve_in_workspace(args.path, ctx.roots, field="path", must_exist=False)
    steps = lineage(store_of(ctx), str(path), args.depth)
    result = ProvenanceResult(
        path=str(path),
        call_id=steps[-1].call_id if steps else None,
        steps=steps,
        drift=drift(steps, current_digest),
        prov=prov_document(steps),
    )
    if args.write_beside:
        result.written = _write_beside(f"{args.path}{BESIDE}", result, ctx)
    return result


def _write_beside(uri: str, result: ProvenanceResult, ctx: JobContext) -> str:
    target = output_path(uri, ctx.roots, overwrite=True, field="path")
    with atomic_output(Path(pinned(target, "path")), ctx.fence) as tmp:
        tmp.write_text(json.dumps(result.prov, indent=2, sort_keys=True), encoding="utf-8")
    return str(target)
