"""How a tool is declared: `ToolSpec` ties a name to its queue, argument and result models, and annotations."""

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from schemas.content import ContentBlock
from schemas.events.tool import ClientCapability
from schemas.preflight.justification import PreflightSpec
from schemas.tools.limits import Bound


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown fields are errors, so a typo never passes silently; field docstrings
    become schema descriptions."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ToolResult(BaseModel):
    """Base of every tool's structured result; field docstrings become schema descriptions (the tool reference)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    wrote: ClassVar[bool] = True
    """The files this result names were written by its own call (provenance records them as its outputs); False
    for a result that only names files its child calls wrote, or none."""

    def summary(self) -> str:
        """One line for people; subclasses say what matters."""
        return type(self).__name__

    def blocks(self) -> list[ContentBlock]:
        """Media shown beside the result (an image, an embedded resource); none unless a subclass has some."""
        return []


class Reprojection(ToolResult):
    """An input a tool moved into another CRS before using it: said in the result, never done silently."""

    input: str
    """The argument whose coordinates were transformed: `zones`, `mask`, `bounds`, `inputs[1]`, …"""
    from_crs: str
    to_crs: str


def reprojections_said(reprojected: list[Reprojection]) -> str:
    """`; zones reprojected from EPSG:4326 to EPSG:32633` for a summary's end; empty when nothing was moved."""
    return "".join(f"; {r.input} reprojected from {r.from_crs} to {r.to_crs}" for r in reprojected)


@dataclass(frozen=True)
class Hints:
    """MCP tool annotations, stated honestly per tool."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """One tool as both sides know it. The gateway publishes it; a worker runs the job bound to it
    (`@job(SPEC)` in `workers/tools/`)."""

    name: str
    title: str
    description: str
    queue: str
    args: type[ToolArgs]
    result: type[ToolResult]
    hints: Hints = field(default_factory=Hints)
    timeout_s: float = 300.0
    preflight: tuple[PreflightSpec, ...] = ()
    """Justifications needed before the tool runs (preflight)."""
    queue_from: str | None = None
    """An argument that names the queue to run on (only `ping` has one)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Argument names some clients send instead of ours (`path` → `uri`): accepted and reported."""
    tiled: bool = False
    """Large calls may run as a grid of windows across workers (`schemas.tiling`); the workers say how to plan,
    run one window and assemble (`workers.tiling`)."""
    client_needs: frozenset[ClientCapability] = frozenset()
    """Client capabilities the tool cannot run without (its job asks the client): a client that did not declare
    them gets `-32021` and no call is made."""
    runs_long: bool = False
    """A client that declared the tasks extension gets a task handle at once (`gateway.tasks.policy`)."""
    task_only: bool = False
    """Runs only as a task: a client that did not declare the tasks extension gets `-32021` and no call is made."""
    bounds: tuple[Bound, ...] = ()
    """The `GEOGATE_LIMIT_*` bounds its job checks besides the result size every call has (`schemas.tools.limits`);
    the published description states them with their values."""
    internal: bool = False
    """A job the gateway runs for itself (a resource read, a handler run, a tile, a fan-in): same path and events,
    never in `tools/list`."""
    toolset: str | None = None
    """The toolset that publishes it (`schemas.tools.toolsets`); None takes its concept module's."""
    examples: tuple[dict[str, Any], ...] = ()
    """Example arguments, each valid for `args` (a test checks): the first is shown in the published description
    and the tool reference."""
    example_result: dict[str, Any] | None = None
    """A result of the first example as the tool returns it (valid for `result`), for the tool reference."""
    app: str | None = None
    """The `ui://` resource (MCP Apps, `_meta.ui.resourceUri`) a host that supports them shows the result in; other
    hosts show the result as it is."""
