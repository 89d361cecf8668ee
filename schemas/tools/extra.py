"""Tools added beside Geogate's own by a module that a setting names (`GEOGATE_EXTRA_TOOLS`), at process start.

Such a module (the test harness keeps its fixtures in one, under `tests/`) keeps this contract:

- `SPECS: tuple[ToolSpec, ...]`: its tools, added to the registry both sides read (`schemas.tools.EXTRA`);
- `gateway_tools(runtime) -> list[Tool]` and `register_gateway(server, runtime)`: what the gateway publishes for
  them (their MCP tools; resources, prompts);
- `load_jobs()`: registers their jobs with a worker (`workers.jobs.job`).

The gateway and the worker each load it once at start-up; nothing else in the product names it.
"""

import importlib
from types import ModuleType

from schemas.tools import add_extra


def load(module: str | None) -> ModuleType | None:
    """Import `module` (a dotted name) and register its `SPECS`; None when no module is named.

    Raises:
        ImportError: the module cannot be imported.
        ValueError: one of its tools takes the name of one of Geogate's own.
    """
    if not module:
        return None
    extra = importlib.import_module(module)
    add_extra(tuple(extra.SPECS))
    return extra
