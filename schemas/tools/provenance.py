"""The provenance tools: `provenance` (the lineage of a file, from the log, as W3C PROV-JSON) and `rerun` (its calls
made again into another folder, with the digests compared)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas import routes
from schemas.events import FileDigest
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec
from schemas.tools.raster import Uri

TOOLSET = "provenance"


class TilesSummary(BaseModel):
    """A tiled call's tiles, summarised: how many, on which workers, their total run time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    workers: list[str] = Field(default_factory=list)
    duration_ms: float = 0.0


class Step(BaseModel):
    """One call of a lineage, as the log tells it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    call_id: str
    tool: str = ""
    args: dict[str, JsonValue] = Field(default_factory=dict)
    actor: str = ""
    worker: str = ""
    requested_at: str = ""
    started_at: str = ""
    finished_at: str = ""
    duration_ms: float = 0.0
    inputs: list[FileDigest] = Field(default_factory=list)
    outputs: list[FileDigest] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    justifications: dict[str, JsonValue] = Field(default_factory=dict)
    """The justifications that let a gated call through, by hash (what was decided and why: a CRS, a method)."""
    decisions: dict[str, JsonValue] = Field(default_factory=dict)
    """What the result says was chosen: its CRS fields and the inputs it reprojected."""
    tiles: TilesSummary | None = None
    expired: bool = False
    """The call's events are past retention (`GEOGATE_RETENTION_FINISHED_TTL_S`): only its outputs are known."""


class Drift(BaseModel):
    """A file of the lineage whose content is not the one recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    role: Literal["output", "input"]
    recorded: str
    current: str | None
    """Its sha256 now; None when the file no longer exists."""
    call_id: str


class ProvenanceArgs(ToolArgs):
    path: Uri
    """A workspace file."""
    depth: int = Field(default=8, ge=0, le=64)
    """How many generations of inputs written by Geogate to follow (0: the writing call only)."""
    write_beside: bool = False
    """Also write the record as `<path>.prov.json`."""


class ProvenanceResult(ToolResult):
    path: str
    call_id: str | None
    """The call that last wrote the file; None when Geogate never wrote it."""
    steps: list[Step]
    """The lineage's calls, each after the calls that wrote its inputs."""
    drift: list[Drift]
    prov: dict[str, JsonValue]
    """The record in W3C PROV-JSON."""
    written: str | None = None

    def summary(self) -> str:
        if self.call_id is None:
            return f"{self.path} was not written by Geogate"
        steps = " → ".join(s.tool or s.call_id for s in self.steps)
        drifted = f"; drift: {', '.join(d.path for d in self.drift)}" if self.drift else "; no drift"
        return f"{self.path}: {len(self.steps)} step(s) ({steps}){drifted}"


PROVENANCE = ToolSpec(
    name="provenance",
    title="Provenance of a file",
    description=(
        "Where a workspace file comes from, from the event log: the call that wrote it, its inputs with their "
        "sha256 when read and, recursively, theirs; parameters, worker, software versions, times, tiles. W3C "
        "PROV-JSON; files changed since are reported as drift."
    ),
    queue=routes.GDAL,
    args=ProvenanceArgs,
    result=ProvenanceResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=120.0,
    toolset=TOOLSET,
    examples=({"path": "dem_utm.tif"},),
    example_result={
        "path": "/data/gis/dem_utm.tif",
        "call_id": "01JD8Z6Q3V",
        "steps": [
            {
                "call_id": "01JD8Z6Q3V",
                "tool": "raster_reproject",
                "args": {"uri": "dem.tif", "output": "dem_utm.tif", "dst_crs": "EPSG:32633"},
                "worker": "node-1:4121",
                "inputs": [{"path": "/data/gis/dem.tif", "sha256": "9f2c…", "size": 8642, "role": "uri"}],
                "outputs": [{"path": "/data/gis/dem_utm.tif", "sha256": "41ab…", "size": 9120, "role": "output"}],
                "versions": {"gdal": "3.9.3", "geogate": "0.1.0"},
            }
        ],
        "drift": [],
        "prov": {"entity": {"file:/data/gis/dem_utm.tif#41ab…": {"gg:sha256": "41ab…"}}},
    },
)


class RerunArgs(ToolArgs):
    path: Uri
    """A workspace file written by Geogate."""
    folder: Uri
    """An empty or new workspace folder for the new outputs (named as the originals)."""
    depth: int = Field(default=8, ge=0, le=64)
    """As in `provenance`: how far back the calls are made again."""


class RerunCall(BaseModel):
    """One call made again, and how its outputs compare with the original's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    original: str
    call_id: str
    tool: str
    outputs: dict[str, str]
    """The new outputs' sha256, by file name."""
    same: bool
    """Every output has the original's sha256."""


class RerunResult(ToolResult):
    path: str
    output: str
    """The new file that stands for `path`."""
    calls: list[RerunCall]
    same: bool
    """The new file has the original's sha256."""
    drift: list[Drift] = Field(default_factory=list)
    """Files the lineage started from that changed since: a re-run reads them as they are now."""

    def summary(self) -> str:
        verdict = "same sha256" if self.same else "different sha256"
        return f"{len(self.calls)} call(s) made again; {self.output}: {verdict} as {self.path}"


RERUN = ToolSpec(
    name="rerun",
    title="Re-run a file's provenance",
    description=(
        "Make the calls that produced a workspace file again, in order, writing into `folder`, and compare each "
        "output's sha256 with the original's."
    ),
    queue=routes.WORKFLOW,
    args=RerunArgs,
    result=RerunResult,
    hints=Hints(read_only=False, idempotent=False),
    timeout_s=3600.0,
    toolset=TOOLSET,
    examples=({"path": "dem_utm.tif", "folder": "rerun"},),
    example_result={
        "path": "/data/gis/dem_utm.tif",
        "output": "/data/gis/rerun/dem_utm.tif",
        "calls": [
            {
                "original": "01JD8Z6Q3V",
                "call_id": "01JD9A1B2C",
                "tool": "raster_reproject",
                "outputs": {"dem_utm.tif": "41ab…"},
                "same": True,
            }
        ],
        "same": True,
    },
)
