"""How a tool runs by windows: its planner, its one-window job and its assembly, registered under its name.

A tool declares `tiled=True` in its `ToolSpec`; its binding in `workers/tools/` registers a `Tiler` here with
`tiler(SPEC, ...)`. The planner decides (returns None to run the call whole), the tile job runs as the internal
tool `<name>.tile`, and the assembly turns the tiles' parts and partial results into the tool's own result.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, JsonValue

from schemas.events import ToolRequested
from schemas.tools.base import ToolSpec
from schemas.tools.tiling import TileArgs, TileResult, TileWindow, tile_spec
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import job


@dataclass(frozen=True)
class Plan:
    """A call cut into windows: what every tile needs (`shared`, JSON) and where the parts go (`folder`)."""

    windows: list[TileWindow]
    columns: int
    rows: int
    tile_size: int
    width: int
    height: int
    folder: Path | str
    """The parts folder: a path, or the `s3://` URI of the call's prefix in an object root (`fan_out.fanned_out`)."""
    shared: dict[str, JsonValue]


Planner = Callable[[Any, JobContext], Plan | None]
TileJob = Callable[[TileArgs, JobContext], TileResult]
Assembler = Callable[[Any, TileArgs, list[TileResult], JobContext], BaseModel]
"""(the call's arguments, tile 0's arguments (the plan as the tiles saw it), every tile's result, ctx) → result."""


@dataclass(frozen=True)
class Tiler:
    plan: Planner
    run: TileJob
    assemble: Assembler


TILERS: dict[str, Tiler] = {}


@dataclass(frozen=True)
class Join:
    """How the fan-in ends a fanned-out call whose children are not windows (a plan's steps): its result once every
    child succeeded, and its error when child `index` failed."""

    result: Callable[[Any, ToolRequested], BaseModel]
    failed: Callable[[Any, str, int], JobFailed]


JOINS: dict[str, Join] = {}


def tiler(spec: ToolSpec, *, plan: Planner, run: TileJob, assemble: Assembler) -> Tiler:
    """Register how tool `spec` runs by windows; its tile job becomes the job of `<name>.tile`."""
    if spec.name in TILERS:
        raise ValueError(f"tiler {spec.name!r} registered twice")
    declared = Tiler(plan, job(tile_spec(spec))(run), assemble)
    TILERS[spec.name] = declared
    return declared
