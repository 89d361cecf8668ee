"""Events of the tool-call aggregate (`call:<id>`): requested → started → progress* → succeeded | failed."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas.content import ContentBlock
from schemas.events.base import EventData
from schemas.ids import CallId

ClientCapability = Literal["sampling", "elicitation", "roots"]
"""What a client may declare that lets a job ask it for input (`sampling/createMessage`, `elicitation/create`,
`roots/list`)."""
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class OutputRef(BaseModel):
    """A large output kept outside the log: where it is, how big, and its digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str
    """`blob://sha256:<hex>` for outputs kept in the blob store, or a workspace path for files."""
    size: int = Field(ge=0, le=2**63 - 1)
    sha256: str
    media_type: str = "application/json"


class FileDigest(BaseModel):
    """A workspace file as a call saw it: its real path and sha256 (at read time for an input, as written for an
    output). Provenance (`geogate.calls.provenance`) is built from these."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """The file's real path (a remote input's URL)."""
    sha256: str | None = None
    """None for a remote input, which is read by range requests and never digested whole."""
    size: int | None = Field(default=None, ge=0, le=2**63 - 1)
    role: str = ""
    """The argument that named it (`uri`, `mask`, `inputs[1]`, `output`)."""


class ToolRequested(EventData):
    """The gateway accepted a `tools/call` and validated its arguments."""

    type: Literal["tool.requested"] = "tool.requested"
    call_id: CallId
    tool: str
    queue: str
    args: dict[str, JsonValue]
    """Validated, normalised arguments (canonical names, defaults filled in)."""
    timeout_s: float
    result_handler: dict[str, JsonValue] | None = None
    """Optional result handler to run over the tool's output (Generative Invocation)."""
    justified_by: list[str] = Field(default_factory=list)
    """Hashes of the justifications that let this gated call through (preflight)."""
    client_capabilities: list[ClientCapability] = Field(default_factory=list)
    """What the calling client declared it can answer, so a job knows what it may ask (`ask_client` in
    `workers.jobkit.inputs`); empty for the gateway's and the workers' own calls, which have no client to ask."""
    held_args: list[str] = Field(default_factory=list)
    """Arguments whose values redaction masked in `args` (a presigned URL's signature): their real values are held
    beside the log for the worker, not in it (`geogate.calls.held`)."""


class ToolStarted(EventData):
    """A worker took the job. A redelivered job appends one of these per attempt."""

    type: Literal["tool.started"] = "tool.started"
    call_id: CallId
    worker: str
    """`hostname:pid` of the process running the job."""
    attempt: str
    queue_wait_ms: float
    lease: str = ""
    """The liveness lease of the worker node holding the call; when it lapses, the reaper re-dispatches the call."""
    dispatch: int = 1
    """Which dispatch of the call this attempt took (1 = the gateway's message, n = the (n-1)th re-dispatch)."""


class ToolProgress(EventData):
    """Progress of a running job, relayed to the client as `notifications/progress`."""

    type: Literal["tool.progress"] = "tool.progress"
    call_id: CallId
    progress: float
    total: float | None = None
    message: str | None = None


class ToolLogged(EventData):
    """A line the job addresses to its client, relayed as `notifications/message` (on 2026-07-28 only to a
    request that asked for a log level); the worker's own logging stays in its log file."""

    type: Literal["tool.logged"] = "tool.logged"
    call_id: CallId
    level: LogLevel = "info"
    message: str = Field(max_length=2000)
    logger: str | None = Field(default=None, max_length=200)

    def describe(self) -> str:
        return f"{self.level}: {self.message}"


class ToolSucceeded(EventData):
    """The job finished. `result` is the structured output, or None when it lives behind `output_ref`."""

    type: Literal["tool.succeeded"] = "tool.succeeded"
    call_id: CallId
    result: JsonValue = None
    text: str = ""
    """Short human-readable summary of the result."""
    content: list[ContentBlock] = Field(default_factory=list, max_length=16)
    """Media the job returns beside its result (`ToolResult.blocks`): images, audio, embedded resources."""
    output_ref: OutputRef | None = None
    duration_ms: float = 0.0
    worker: str = ""
    handler_lease: str = ""
    """Set when this worker runs the call's result handler in place, next: the lease it holds. Until the handler
    starts, the run is in the running index under that lease, so the reaper re-dispatches it if the node dies."""
    inputs: list[FileDigest] = Field(default_factory=list)
    """The workspace files the job read, each with its sha256 when the job opened it."""
    outputs: list[FileDigest] = Field(default_factory=list)
    """The files the job wrote (a tile's parts aside): what the `writers` projection folds."""
    versions: dict[str, str] = Field(default_factory=dict)
    """The worker's software (`geogate`, `gdal`, `proj`, `rasterio`, `pyogrio`, `shapely`), on calls that read or
    wrote files."""


class ToolFailed(EventData):
    """The job ended with an error. `retryable` says whether a retry could succeed."""

    type: Literal["tool.failed"] = "tool.failed"
    call_id: CallId
    code: str
    message: str
    retryable: bool = False
    field: str | None = None
    """The argument the error is about, when there is one."""
    details: JsonValue = None
    duration_ms: float = 0.0
    worker: str = ""


class ToolCancelRequested(EventData):
    """Someone asked to stop the call (client disconnect, `notifications/cancelled`, `tasks/cancel`)."""

    type: Literal["tool.cancel_requested"] = "tool.cancel_requested"
    call_id: CallId
    reason: str = Field(default="cancelled by client", max_length=500)


class ToolRedispatched(EventData):
    """The worker holding a run of the call lost its lease; the run was put back on its queue as a fresh message.

    `stage` says which run: the tool's job (`tool`) or its result handler (`handler`). The stale attempt is fenced:
    its late appends are refused, so it can produce neither a second outcome nor an output file.
    """

    type: Literal["tool.redispatched"] = "tool.redispatched"
    call_id: CallId
    stage: Literal["tool", "handler", "fan_in"] = "tool"
    dispatch: int
    """The dispatch number of the fresh message (the gateway's first message is dispatch 1)."""
    lost_worker: str
    lost_lease: str
    lost_attempt: str
    reason: str


GridCount = Annotated[int, Field(ge=1, le=2**31 - 1)]
"""A raster grid's size or count of tiles: GDAL's raster sizes are 32-bit integers."""


class ToolFannedOut(EventData):
    """A large call was planned as a grid of tiles, each appended as a child call (`<id>.<index>`) with its
    message; the parent holds no worker until its tiles have ended and the fan-in runs."""

    type: Literal["tool.fanned_out"] = "tool.fanned_out"
    call_id: CallId
    tiles: GridCount
    columns: GridCount
    rows: GridCount
    tile_size: GridCount
    width: GridCount
    """Pixels across the grid the tiles cover (the output's, or the source's for a tool without output)."""
    height: GridCount
    folder: str
    """The hidden per-call folder of the workspace where the tiles leave their parts."""


class ToolFanInStarted(EventData):
    """A worker took the fan-in of a tiled call: it assembles the output, or fails the call if a tile failed."""

    type: Literal["tool.fan_in_started"] = "tool.fan_in_started"
    call_id: CallId
    worker: str
    attempt: str
    lease: str = ""


TERMINAL_TYPES = frozenset({"tool.succeeded", "tool.failed"})
