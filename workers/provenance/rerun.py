"""The `rerun` job: a file's lineage made again, call by call in order, into another folder, digests compared.

Each step's arguments are the original's, with every path the step wrote replaced by the same name in the new
folder, and every path an earlier step wrote replaced by that step's new file: the new calls read what the new
calls wrote, and the files the lineage started from as they are now (a drifted one is reported).
"""

from pathlib import Path
from typing import Any

from pydantic import JsonValue

from geogate.calls.lineage import lineage
from geogate.calls.prov_json import drift
from schemas.events import ToolFailed, ToolSucceeded
from schemas.preflight.gate import PreflightMissing
from schemas.tools import SPECS
from schemas.tools.provenance import RerunArgs, RerunCall, RerunResult, Step
from schemas.validation import ArgumentsInvalid
from workers.jobkit.context import JobContext
from workers.jobkit.digests import current_digest
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import make_folders, resolve_in_workspace
from workers.provenance.record import store_of
from workers.run.calling import CallTimedOut, call_tool


def rerun(args: RerunArgs, ctx: JobContext) -> RerunResult:
    """Make the calls of `args.path`'s lineage again into `args.folder` and compare the outputs' sha256.

    Raises:
        JobFailed: `provenance.none` (Geogate never wrote the file), `provenance.expired` (a call's events are past
            retention), `rerun.step_failed` (a call failed again: its error is in the message).
    """
    store = store_of(ctx)
    path = str(resolve_in_workspace(args.path, ctx.roots, field="path", must_exist=False))
    steps = lineage(store, path, args.depth)
    if not steps:
        raise JobFailed("provenance.none", f"path: no call of the log wrote {args.path!r}", field="path")
    if expired := [s.call_id for s in steps if s.expired]:
        raise JobFailed("provenance.expired", f"the events of call(s) {', '.join(expired)} are past retention")
    folder = resolve_in_workspace(args.folder, ctx.roots, field="folder", must_exist=False)
    make_folders(folder, ctx.roots, "folder")
    moved: dict[str, str] = {}
    calls = []
    for number, step in enumerate(steps):
        ctx.progress(number, len(steps), f"{step.tool} ({step.call_id})")
        calls.append(_again(step, folder, moved, ctx))
    output = moved.get(path, path)
    return RerunResult(
        path=path,
        output=output,
        calls=calls,
        same=current_digest(output) == next((o.sha256 for o in steps[-1].outputs if o.path == path), None),
        drift=[d for d in drift(steps, current_digest) if d.role == "input" and d.path not in moved],
    )


def _again(step: Step, folder: Path, moved: dict[str, str], ctx: JobContext) -> RerunCall:
    """Make one step again; `moved` learns where its outputs went."""
    written = {o.path for o in step.outputs}
    for original in sorted(written):
        moved[original] = str(folder / Path(original).name)
    arguments = _moved(step.args, moved, ctx.roots)
    outcome = _call(step, arguments, ctx)
    new = {Path(o.path).name: o.sha256 or "" for o in outcome.outputs}
    same = all(new.get(Path(o.path).name) == o.sha256 for o in step.outputs)
    return RerunCall(original=step.call_id, call_id=outcome.call_id, tool=step.tool, outputs=new, same=same)


def _call(step: Step, arguments: dict[str, JsonValue], ctx: JobContext) -> ToolSucceeded:
    store, spec = store_of(ctx), SPECS.get(step.tool)
    if spec is None:
        raise JobFailed("rerun.step_failed", f"call {step.call_id}: this server has no tool {step.tool!r}")
    try:
        outcome = call_tool(
            store,
            spec,
            arguments,
            actor=ctx.actor,
            timeout_s=spec.timeout_s,
            ttl_for=ctx.ttl_for,
            trace_id=ctx.trace_id,
        )
    except CallTimedOut as exc:
        raise JobFailed("rerun.step_failed", f"{step.tool} (for {step.call_id}): {exc}", retryable=True) from exc
    except (ArgumentsInvalid, PreflightMissing) as exc:  # the tool changed since, or a justification lapsed
        raise JobFailed("rerun.step_failed", f"{step.tool} (for {step.call_id}): {exc.code}: {exc}") from exc
    if isinstance(outcome.data, ToolFailed):
        error = outcome.data
        raise JobFailed("rerun.step_failed", f"{step.tool} (for {step.call_id}) failed: {error.code}: {error.message}")
    return outcome.payload(ToolSucceeded)


def _moved(value: Any, moved: dict[str, str], roots: list[Path]) -> Any:
    """`value` (arguments as JSON) with every string naming a moved file replaced by its new path."""
    if isinstance(value, dict):
        return {key: _moved(item, moved, roots) for key, item in value.items()}
    if isinstance(value, list):
        return [_moved(item, moved, roots) for item in value]
    if not isinstance(value, str):
        return value
    try:
        real = str(resolve_in_workspace(value, roots, must_exist=False))
    except JobFailed:
        return value  # not a workspace path (a CRS, an expression …)
    return moved.get(real, value)
