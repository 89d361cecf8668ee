"""The job registry: tool name → the plain function that does its work (`(args, ctx) -> result`)."""

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from workers.confine import confinement
from workers.context import JobContext

Job = Callable[[Any, JobContext], BaseModel]
J = TypeVar("J", bound=Job)

JOBS: dict[str, Job] = {}


def job(name: str) -> Callable[[J], J]:
    """Register the function that runs tool `name`; it runs confined (`workers.confine`: the files it opens stay
    the checked ones)."""

    def register(fn: J) -> J:
        if name in JOBS:
            raise ValueError(f"job {name!r} registered twice")

        @functools.wraps(fn)
        def confined(args: Any, ctx: JobContext) -> BaseModel:
            with confinement(ctx.roots):
                return fn(args, ctx)

        JOBS[name] = confined
        return confined  # type: ignore[return-value]

    return register


def load_all() -> dict[str, Job]:
    """Import every job family (each import registers its jobs) and return the registry."""
    import workers.core
    import workers.gdal.catalog
    import workers.gdal.convert
    import workers.gdal.info
    import workers.gdal.reproject
    import workers.gdal.stats
    import workers.gdal.vector_ops
    import workers.llm.job
    import workers.llm.justify
    import workers.sandbox.job
    import workers.workflows.jobs  # noqa: F401

    return JOBS
