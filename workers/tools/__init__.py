"""The jobs of Geogate's tools, bound to their definitions: `workers/tools/<concept>.py` holds a `@job(SPEC)` for
each `ToolSpec` of `schemas/tools/<concept>.py` (thin functions calling the implementation in `workers/gdal/`,
`workers/llm/` …, or the job itself when small). `load_all` imports every module of this package; nothing lists
them."""

import importlib
import pkgutil

from workers.jobs import JOBS, Job


def load_all() -> dict[str, Job]:
    """Import every job module of this package (packages walked) and return the registry."""
    for info in sorted(pkgutil.walk_packages(__path__, prefix=f"{__name__}."), key=lambda info: info.name):
        importlib.import_module(info.name)
    return JOBS
