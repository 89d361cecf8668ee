"""A plan validated whole before anything runs: the pure checks (`schemas.plan_check`), then what needs the
workspace and the log: input paths that exist inside it, output paths inside it, band numbers a literal input raster
has, the preflight justifications the steps still need (all of them at once) and an estimate of the calls."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rasterio
from pydantic import JsonValue, ValidationError
from pyproj import CRS

from schemas.plan_check import Checked, check_steps, references
from schemas.tools import TOOLS, ToolSpec
from schemas.tools.plans import PLAN_RUN, PlanArgs, PlanStep, Problem
from schemas.tools.raster import RASTER_REPROJECT
from schemas.tools.raster_ops import RASTER_CLIP, RasterClipArgs
from workers.gdal.clip import box_window
from workers.gdal.errors import open_raster, parse_crs, transformer_between
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobkit.files import resolve_in_workspace
from workers.run.calling import issue, verdict_of
from workers.tiling.grid import settings_of

INPUTS = frozenset({"uri", "path", "zones", "other", "mask"})
"""Arguments that name a workspace file a step reads."""
OUTPUTS = frozenset({"output", "folder"})
BANDS = frozenset({"band", "bands"})


@dataclass(frozen=True)
class Validated:
    checked: Checked
    problems: list[Problem]
    required: list[dict[str, JsonValue]]
    estimate: int


def steps_specs() -> dict[str, ToolSpec]:
    """The tools a step may call: every published tool but `plan_run` itself."""
    return {name: spec for name, spec in TOOLS.items() if name != PLAN_RUN.name}


def validate(args: PlanArgs, ctx: JobContext, *, issued: bool = True) -> Validated:
    """Every problem of the plan at once, the justifications its steps need (issued on the log unless `issued` is
    false), and its estimated calls."""
    checked = check_steps(args.steps, steps_specs())
    problems = list(checked.problems)
    estimate = 0
    for step in args.steps:
        found, calls = _file_problems(step, ctx)
        problems += found
        estimate += calls
    return Validated(checked, problems, _required(checked, ctx, issued), estimate)


def invalid(problems: list[Problem]) -> JobFailed:
    """The plan's refusal, every problem listed (`details.problems`), the first in the message."""
    first = problems[0]
    where = f"step {first.step!r}" + (f", argument {first.argument!r}" if first.argument else "")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    details: dict[str, Any] = {"problems": [p.model_dump(mode="json") for p in problems]}
    return JobFailed("plan.invalid", f"{where}: {first.message}{more}", retryable=False, details=details)


def _file_problems(step: PlanStep, ctx: JobContext) -> tuple[list[Problem], int]:
    """Problems of `step`'s literal paths and bands, and how many calls it makes (its tiles, else 1)."""
    refs = {where for where, _ in references(step.args)}
    problems: list[Problem] = []
    rasters: list[Path] = []
    for where, value in _strings(step.args):
        name = where.rsplit(".", 1)[-1].split("[")[0]
        if where in refs or name not in INPUTS | OUTPUTS:
            continue
        try:
            path = resolve_in_workspace(value, ctx.roots, field=where, must_exist=name in INPUTS)
        except JobFailed as exc:
            problems.append(Problem(step=step.id, argument=where, code=exc.code, message=str(exc)))
            continue
        if name == "uri" and path.suffix.lower() in {".tif", ".tiff", ".vrt", ".img", ".nc", ".jp2"}:
            rasters.append(path)
    if not rasters:
        return problems, 1
    try:
        with open_raster(rasters[0], "uri") as src:
            checks = _band_problems(step, src) + _extent_problems(step, src) + _crs_problems(step, src)
            return problems + checks, _calls(step, src, ctx)
    except JobFailed as exc:
        return [*problems, Problem(step=step.id, argument="uri", code=exc.code, message=str(exc))], 1


def _strings(value: Any, where: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in _strings(item, f"{where}.{key}" if where else key)]
    if isinstance(value, list):
        return [s for i, item in enumerate(value) for s in _strings(item, f"{where}[{i}]")]
    return []


def _band_problems(step: PlanStep, src: rasterio.DatasetReader) -> list[Problem]:
    """A band number the step's input raster does not have: refused, naming the valid range."""
    count, name = src.count, Path(src.name).name
    problems = []
    for name in BANDS & set(step.args):
        value = step.args[name]
        bands = value if isinstance(value, list) else [value]
        wrong = [b for b in bands if isinstance(b, int) and not 1 <= b <= count]
        if wrong:
            message = f"band {wrong[0]} does not exist: {name} has bands 1–{count}"
            problems.append(
                Problem(step=step.id, argument=name, code="band.not_found", message=message, valid=[1, count])
            )
    return problems


def _extent_problems(step: PlanStep, src: rasterio.DatasetReader) -> list[Problem]:
    """A clip's literal box that misses its literal input raster: refused, naming the raster's bounds in the box's
    CRS (`valid`). A box or input given by reference is known only once its step has run (the job refuses it)."""
    if step.tool != RASTER_CLIP.name:
        return []
    try:
        args = RasterClipArgs.model_validate(step.args)
    except ValidationError:
        return []  # a reference in the box, or arguments reported as `args.invalid`
    if args.bounds is None:
        return []
    try:
        box_window(src, args)
    except JobFailed as exc:
        valid = exc.details.get("valid") if isinstance(exc.details, dict) else None
        return [Problem(step=step.id, argument=exc.field or "bounds", code=exc.code, message=str(exc), valid=valid)]
    return []


def _crs_problems(step: PlanStep, src: rasterio.DatasetReader) -> list[Problem]:
    """A reprojection of a literal raster into a literal CRS PROJ has no transformation to: refused, naming
    `dst_crs` and CRSs the raster can go to (`valid`)."""
    target, override = step.args.get("dst_crs"), step.args.get("src_crs")
    if step.tool != RASTER_REPROJECT.name or not isinstance(target, str) or not isinstance(override, str | None):
        return []
    if override is None and src.crs is None:
        return []  # the step's job says so (`crs.missing`)
    try:
        source = parse_crs(override, "src_crs") if override else CRS.from_user_input(src.crs.to_wkt())
        transformer_between(source, parse_crs(target, "dst_crs"), "dst_crs")
    except JobFailed as exc:
        valid = exc.details.get("valid") if isinstance(exc.details, dict) else None
        return [Problem(step=step.id, argument=exc.field or "dst_crs", code=exc.code, message=str(exc), valid=valid)]
    return []


def _calls(step: PlanStep, src: rasterio.DatasetReader, ctx: JobContext) -> int:
    """1, or the tiles of a tiled tool's step whose input raster is large enough to be tiled (from its metadata)."""
    spec = TOOLS.get(step.tool)
    if spec is None or not spec.tiled:
        return 1
    settings = settings_of(ctx)
    width, height = src.width, src.height
    if width * height < settings.tile_min_pixels:
        return 1
    size = settings.tile_size
    return math.ceil(width / size) * math.ceil(height / size)


def _required(checked: Checked, ctx: JobContext, issued: bool) -> list[dict[str, JsonValue]]:
    """The justifications the valid steps need and the cache does not hold, each once, in step order. With `issued`,
    each is issued as the gateway's gate issues it (`preflight.required` on the log), so `persist_justifications`
    takes it."""
    if ctx.store is None:
        return []
    missing: dict[str, dict[str, JsonValue]] = {}
    for plan in checked.plans.values():
        verdict = verdict_of(ctx.store, plan, ctx.ttl_for)
        if issued:
            issue(ctx.store, plan.spec, verdict, ctx.actor)
        missing |= {item.hash: item.as_hint() for item in verdict.missing if item.hash not in missing}
    return list(missing.values())
