"""One job across many workers: tile call ids, a tile's window, and the internal tile and fan-in tools.

A tool whose `ToolSpec.tiled` is set may be planned as a grid of windows when it is large. Each window runs as a
child call of its own (`<tool>.tile`, id `<parent>.<index>`), and the fan-in job (`tiles.fan_in`) assembles the
parent's output once every tile has succeeded, or fails the parent when one failed (docs/tiles.md).
"""

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas import routes
from schemas.ids import CallId
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec

TILE_SUFFIX = ".tile"
"""The tile tool of tool `x` is `x.tile`."""
FAN_IN_TOOL = "tiles.fan_in"


def tile_call_id(parent: CallId, index: int) -> CallId:
    """The id of tile `index` of call `parent`: derived, so that planning twice appends nothing twice."""
    return f"{parent}.{index}"


def tile_of(call_id: CallId) -> tuple[CallId, int] | None:
    """`(parent, index)` when `call_id` names a tile, else None (call ids are ULIDs: no dot)."""
    parent, dot, index = call_id.rpartition(".")
    if not dot or not parent or not index.isdigit():
        return None
    return parent, int(index)


def tile_tool(tool: str) -> str:
    return tool + TILE_SUFFIX


class TileWindow(BaseModel):
    """A window of a raster grid, in pixels (rasterio's `Window` without fractions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    col_off: int = Field(ge=0)
    row_off: int = Field(ge=0)
    width: int = Field(ge=1)
    height: int = Field(ge=1)

    def describe(self) -> str:
        right, bottom = self.col_off + self.width - 1, self.row_off + self.height - 1
        return f"columns {self.col_off}–{right}, rows {self.row_off}–{bottom}"


class TileArgs(ToolArgs):
    """One window of a tiled call: everything the tile needs travels with it, so it reads nothing else."""

    parent: CallId
    index: int = Field(ge=0)
    window: TileWindow
    plan: dict[str, JsonValue]
    """What the tool's planner computed once for every tile (grid, profile, the parts folder): tool-specific."""
    tiles: int = Field(default=0, ge=0)
    """How many tiles the call has (0: not recorded): the fewer, the sooner a worker takes its tiles
    (`routes.tile_priority`)."""


class TileResult(ToolResult):
    """What one tile reports back to the fan-in: its window and, for tools that merge numbers, its partial ones."""

    wrote: ClassVar[bool] = False  # a tile's parts: its parent's outcome names the output

    index: int
    window: TileWindow
    partial: JsonValue = None

    def summary(self) -> str:
        return f"tile {self.index}: {self.window.describe()}"


class FanInArgs(ToolArgs):
    call_id: CallId
    """The parent call whose tiles have all ended (or one of which failed)."""


class FanInResult(ToolResult):
    call_id: str
    status: str
    """`succeeded`, `failed`, or `duplicate` when the parent had ended already."""


def tile_spec(spec: ToolSpec) -> ToolSpec:
    """The internal tool that runs one window of tiled tool `spec`, on the same queue."""
    return ToolSpec(
        name=tile_tool(spec.name),
        title=f"One tile of {spec.name}",
        description=f"Internal: run one window of a tiled {spec.name} call.",
        queue=spec.queue,
        args=TileArgs,
        result=TileResult,
        hints=Hints(idempotent=True),
        timeout_s=spec.timeout_s,
        internal=True,
    )


FAN_IN = ToolSpec(
    name=FAN_IN_TOOL,
    title="Fan in a tiled call",
    description="Internal: assemble a tiled call's output from its tiles, or fail it when a tile failed.",
    queue=routes.GDAL,
    args=FanInArgs,
    result=FanInResult,
    hints=Hints(idempotent=True),
    timeout_s=3600.0,
    internal=True,
)
