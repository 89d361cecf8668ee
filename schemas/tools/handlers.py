"""Result handlers on the call path: the `run_result_handler` job, the argument and meta names, the handled result."""

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from schemas import routes
from schemas.tools.base import Hints, ToolArgs, ToolResult, ToolSpec

HANDLER_ARG = "result_handler"
"""The optional argument every published tool accepts."""
HANDLER_META = "io.geogate/result_handler"
"""The same handler under a request's `_meta`; also the result's `_meta` key describing the handler run."""
RAW_URI_TEMPLATE = "calls://{call_id}/raw"
"""The resource serving a call's raw output (before its handler), while its blob lives."""
HANDLED_FIELD = "result"
"""The one field of `structuredContent` when a handler ran (the SDK's own name for wrapped output)."""


def raw_uri(call_id: str) -> str:
    """The raw-output resource of one call."""
    return RAW_URI_TEMPLATE.format(call_id=call_id)


class HandledResult(BaseModel):
    """`structuredContent` of a call whose handler succeeded: the handler's value, wrapped so clients find it."""

    model_config = ConfigDict(extra="forbid")

    result: JsonValue = Field(json_schema_extra={"description": "The result handler's value (any JSON)."})


class RunResultHandlerArgs(ToolArgs):
    call_id: str
    """The call whose tool succeeded and whose handler is to run (read back from the log)."""


class RunResultHandlerResult(ToolResult):
    call_id: str
    status: str
    """`succeeded`, `failed`, or `duplicate` when a redelivered job found the outcome already appended."""


RUN_RESULT_HANDLER = ToolSpec(
    name="run_result_handler",
    title="Run a result handler",
    description="Internal: run a call's result handler over its raw output and append handler.* events.",
    queue=routes.SANDBOX,
    args=RunResultHandlerArgs,
    result=RunResultHandlerResult,
    hints=Hints(read_only=True, idempotent=True),
    timeout_s=60.0,
    internal=True,
)
