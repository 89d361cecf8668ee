"""The `ping` tool: a probe through the whole path (gateway → log → queue → worker → log → gateway)."""

from pydantic import Field

from schemas import routes
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec


class PingArgs(ToolArgs):
    queue: str = Field(default=routes.GDAL, pattern="^(gdal|sandbox|llm|workflow)$")
    """The worker queue to probe."""
    delay_ms: int = Field(default=0, ge=0, le=60_000)
    """Hold the worker this long before answering: for testing timeouts and crash recovery."""


class PingResult(ToolResult):
    pong: bool = True
    worker: str
    """`hostname:pid` of the worker process that answered."""
    queue: str
    queue_wait_ms: float
    """From `tool.requested` being appended to the worker taking the job."""

    def summary(self) -> str:
        return f"pong from {self.worker} on {self.queue} (queue wait {self.queue_wait_ms:.2f} ms)"


PING = ToolSpec(
    name="ping",
    title="Ping a worker queue",
    description=(
        "Health check: sends a no-op job through the event log and a worker queue and reports which worker "
        "answered and how long the job waited in the queue. Use it to check that Geogate is up."
    ),
    queue=routes.GDAL,
    args=PingArgs,
    result=PingResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=90.0,
    queue_from="queue",
    examples=({"queue": "gdal"},),
    example_result={"pong": True, "worker": "node-1:4121", "queue": "gdal", "queue_wait_ms": 1.8},
)
