"""The tool registry both sides read: every `ToolSpec` by name, found in the concept modules of this package.

A tool is defined once, as a module-level `ToolSpec` in `schemas/tools/<concept>.py` (or a module of a concept
package); importing this package imports every such module and collects its specs in the order they are defined,
modules in name order. A spec marked `internal` is run like any other but never published; each tiled tool adds
its internal tile tool (`schemas.tools.tiling.tile_spec`).
"""

import importlib
import pkgutil

from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.tiling import tile_spec
from schemas.tools.toolsets import EXTRA as EXTRA_TOOLSET
from schemas.tools.toolsets import TOOLSETS, concept_toolset

TOOLS: dict[str, ToolSpec] = {}
"""Tools published to MCP clients (`tools/list`)."""

INTERNAL: dict[str, ToolSpec] = {}
"""Jobs the gateway runs for itself (resource reads, handler runs, tiles, fan-ins): same path and events, not in
`tools/list`."""

SPECS: dict[str, ToolSpec] = {}
"""Everything a worker may be asked to run; with the extra tools of `GEOGATE_EXTRA_TOOLS` once they are loaded."""

TOOLSET: dict[str, str] = {}
"""The toolset of each published tool (`schemas.tools.toolsets`), extra tools' included."""

EXTRA: dict[str, ToolSpec] = {}
"""Tools a module named by `GEOGATE_EXTRA_TOOLS` adds (`schemas.tools.extra`): published and run like `TOOLS`."""


def add_extra(specs: tuple[ToolSpec, ...]) -> None:
    """Register extra tools: the gateway publishes them and a worker runs them (`schemas.tools.extra.load`).

    Raises:
        ValueError: an extra tool takes the name of one of Geogate's own.
    """
    for spec in specs:
        if spec.name in TOOLS or spec.name in INTERNAL:
            raise ValueError(f"extra tool {spec.name!r} takes the name of one of Geogate's own tools")
        EXTRA[spec.name] = SPECS[spec.name] = spec
        TOOLSET[spec.name] = spec.toolset or EXTRA_TOOLSET


def defined_specs() -> list[ToolSpec]:
    """Every `ToolSpec` bound to a module-level name in this package's modules, each once: modules in name order
    (packages walked), specs in the order their module defines them.

    Raises:
        ValueError: two specs share a name.
    """
    return [spec for spec, _ in _walk()]


def _walk() -> list[tuple[ToolSpec, str]]:
    """Each defined spec with the name of the module that defines it."""
    found: dict[str, tuple[ToolSpec, str]] = {}
    for info in sorted(pkgutil.walk_packages(__path__, prefix=f"{__name__}."), key=lambda info: info.name):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if not isinstance(value, ToolSpec) or (value.name in found and found[value.name][0] is value):
                continue
            if value.name in found:
                raise ValueError(f"two tools are named {value.name!r}")
            found[value.name] = (value, info.name)
    return list(found.values())


def _collect() -> None:
    for spec, module in _walk():
        (INTERNAL if spec.internal else TOOLS)[spec.name] = spec
        if not spec.internal:
            TOOLSET[spec.name] = spec.toolset or concept_toolset(module)
            if TOOLSET[spec.name] not in TOOLSETS:
                raise ValueError(f"{spec.name}: unknown toolset {TOOLSET[spec.name]!r}")
    INTERNAL.update((tile.name, tile) for tile in (tile_spec(spec) for spec in TOOLS.values() if spec.tiled))
    SPECS.update({**TOOLS, **INTERNAL})


_collect()  # after `add_extra`: the walk imports `schemas.tools.extra`, which imports it

__all__ = [
    "EXTRA",
    "INTERNAL",
    "SPECS",
    "TOOLS",
    "TOOLSET",
    "Hints",
    "ToolArgs",
    "ToolResult",
    "ToolSpec",
    "add_extra",
    "defined_specs",
]
