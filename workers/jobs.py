"""The `job` decorator and the registry it fills: tool name → the plain function that does its work
(`(args, ctx) -> result`). Jobs are bound to their definitions in `workers/tools/`, which `workers.tools.load_all`
imports."""

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from geogate.eventlog.append import Op
from schemas.events import Event, ToolRequested
from schemas.tools import ToolSpec
from workers.jobkit import objects
from workers.jobkit.confine import confinement
from workers.jobkit.context import JobContext
from workers.jobkit.digests import inputs_read
from workers.tiling.grid import PARTS, settings_of

Job = Callable[[Any, JobContext], BaseModel]
J = TypeVar("J", bound=Job)

JOBS: dict[str, Job] = {}
BOUND: dict[str, ToolSpec] = {}
"""The definition each job was bound to, by tool name."""
OWN_LIFECYCLE: set[str] = set()
"""Jobs that run on a finished call and append their own events (`handler.*`) instead of the runner's `tool.*`."""


@dataclass(frozen=True)
class Finished:
    """A call whose job just ended on this worker, before its outcome is appended."""

    requested: Event
    outcome: Event
    output: Any
    """The job's output as JSON, in this process's memory (None when the job failed)."""
    ctx: JobContext

    @property
    def call(self) -> ToolRequested:
        return self.requested.payload(ToolRequested)


Land = Callable[[], bool]
"""Appends the call's outcome (once, however often called); True when it landed, False when the attempt was
superseded."""


@dataclass(frozen=True)
class Next:
    """What follows a call's outcome: the outcome as appended, effects appended atomically with it (a follow-up
    job's enqueue), and work this worker does around it (a result handler run in place).

    `then` is given the outcome's append (`Land`) and must call it before appending anything of its own; work that
    appends nothing (a sandbox run over the output in memory) may go on meanwhile, and is dropped when the outcome
    does not land. The runner lands the outcome itself after `then` if `then` did not.
    """

    outcome: Event
    effects: list[Op] = field(default_factory=list)
    then: Callable[[Land], None] | None = None


@dataclass(frozen=True)
class Started:
    """A call whose run just started on this worker, before its job runs."""

    requested: Event
    started: Event
    ctx: JobContext

    @property
    def call(self) -> ToolRequested:
        return self.requested.payload(ToolRequested)


HandOff = Callable[[Started], bool]
"""Given a started call: True when it took the call instead of its job (the call then ends some other way)."""
HAND_OFFS: list[HandOff] = []

FollowUp = Callable[[Finished], Next | None]
"""Given a finished call: what follows its outcome, or None when nothing does."""
FOLLOW_UPS: list[FollowUp] = []


def job(spec: ToolSpec, *, own_lifecycle: bool = False) -> Callable[[J], J]:
    """Bind the function that runs tool `spec` (registered under `spec.name`); it runs confined
    (`workers.jobkit.confine`: the files it opens stay the checked ones), and the inputs it read are left on
    `ctx.inputs` (`workers.jobkit.digests`). With `own_lifecycle`, the runner neither
    starts nor ends the call: the job does.

    Raises:
        ValueError: a job for this tool is bound already.
    """
    name = spec.name

    def register(fn: J) -> J:
        if name in JOBS:
            raise ValueError(f"job {name!r} registered twice")

        @functools.wraps(fn)
        def confined(args: Any, ctx: JobContext) -> BaseModel:
            with object_roots(ctx), confinement(ctx.roots, reserved(ctx)):
                result = fn(args, ctx)
                ctx.inputs = inputs_read()
                return result

        JOBS[name] = confined
        BOUND[name] = spec
        if own_lifecycle:
            OWN_LIFECYCLE.add(name)
        return confined  # type: ignore[return-value]

    return register


@contextlib.contextmanager
def object_roots(ctx: JobContext) -> Iterator[None]:
    """`ctx.roots` with a mirror folder for each `s3://` root (`workers.jobkit.objects`) for the block."""
    if ctx.settings is None:
        yield
        return
    folders = ctx.roots
    with objects.mounted(ctx.settings.workspaces, folders) as roots:
        ctx.roots = roots
        try:
            yield
        finally:
            ctx.roots = folders


def reserved(ctx: JobContext) -> list[Path]:
    """Folders no tool may read or write: the data directory (`GEOGATE_DATA_DIR`), and each root's `.geogate`,
    where tiled calls keep their parts."""
    return [settings_of(ctx).data_dir.expanduser().resolve(), *(root / PARTS.parts[0] for root in ctx.roots)]


def follow_up(fn: FollowUp) -> FollowUp:
    """Declare what follows a call's outcome (the runner appends effects atomically with it, then runs `then`)."""
    FOLLOW_UPS.append(fn)
    return fn


def hand_off(fn: HandOff) -> HandOff:
    """Declare what may take a started call instead of its job (the runner then neither runs the job nor ends it)."""
    HAND_OFFS.append(fn)
    return fn
