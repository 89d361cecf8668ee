"""`POST /api/chat` and `POST /api/chat/stream`: the `ask` tool over plain HTTP, the stream relayed from the log.

Both run `ask` through `runtime.call`, so a chat request is one tool call like any client's. The stream gives the
call a W3C trace id and tails the `llm` and `calls` streams for events of that trace: each model attempt and tool
request as `progress`, each finished tool call as `tool_call`, then the `xray` and the `answer` (or an `error`).
"""

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from schemas.chat import AnswerItem, ChatAnswer, ProgressItem, ToolCallItem, XRayItem, XRayTool
from schemas.events import Event, ToolFailed, ToolRequested, ToolSucceeded
from schemas.events.llm import LLMAttempted, LLMConversationStarted
from schemas.tools.llm import ASK
from schemas.validation import ArgumentsInvalid, validate

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from gateway.runtime import Gateway

STATUS = {"args.invalid": 422, "llm.rate_limited": 429, "llm.provider_error": 502, "call.timeout": 504}
"""HTTP status of a failed `ask` by its error code; anything else is a 500 (with the error, never a trace)."""
POLL_MS = 200
PREVIEW_CHARS = 200
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def register(server: "MCPServer", runtime: "Gateway") -> None:
    """Add the two chat routes to `server`."""

    @server.custom_route("/api/chat", methods=["POST"])
    async def chat(request: Request) -> Response:
        args = await arguments(request)
        if isinstance(args, Response):
            return args
        return result_response(await runtime.run(ASK, args))

    @server.custom_route("/api/chat/stream", methods=["POST"])
    async def chat_stream(request: Request) -> Response:
        args = await arguments(request)
        if isinstance(args, Response):
            return args
        return StreamingResponse(relay(runtime, args), media_type="text/event-stream", headers=SSE_HEADERS)


async def arguments(request: Request) -> dict[str, Any] | JSONResponse:
    """The body as `ask` arguments, or a 400 (not a JSON object) / 422 (field errors) response."""
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return problem(400, {"code": "body.invalid", "message": 'the body must be a JSON object {"question": …}'})
    try:
        validate(ASK, body)
    except ArgumentsInvalid as exc:
        return problem(422, {"code": exc.code, "message": str(exc), "errors": [e.as_dict() for e in exc.errors]})
    return body


def problem(status: int, error: dict[str, Any]) -> JSONResponse:
    """An error response: `{"error": {"code", "message", …}}`."""
    return JSONResponse({"error": error}, status_code=status)


def result_response(result: CallToolResult) -> JSONResponse:
    """The answer and X-ray with the call id, or the tool error with a status that fits its code."""
    body = result.structured_content or {}
    call = (result.meta or {}).get("io.geogate/call", {})
    if result.is_error:
        error = body.get("error", {"code": "ask.failed", "message": "the ask call failed"})
        return problem(STATUS.get(str(error.get("code")), 500), error)
    return JSONResponse({**body, "call_id": call.get("call_id")})


def _trace_context(trace_id: str) -> Context:
    """Just enough of an MCP request context for `runtime.call`: a `traceparent` in `_meta` carrying `trace_id`.

    Progress needs no relay here: the stream reads the log itself.
    """

    async def report_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
        return None

    meta = {"traceparent": f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01"}
    return cast(Context, SimpleNamespace(request_context=SimpleNamespace(meta=meta), report_progress=report_progress))


async def relay(runtime: "Gateway", args: dict[str, Any]) -> AsyncIterator[str]:
    """Run `ask` and yield SSE frames for the events of its trace as they land, then the X-ray and the answer.

    The events come from the gateway's one shared reader of the log (`gateway.outcomes`), which follows the trace.
    """
    assert runtime.reader is not None, "gateway not started"
    trace_id = uuid.uuid4().hex
    with runtime.reader.follow_trace(trace_id) as inbox:
        call = asyncio.create_task(runtime.run(ASK, args, _trace_context(trace_id)))
        tail = TraceTail(trace_id)
        try:
            while not (call.done() and inbox.empty()):
                try:
                    event = await asyncio.wait_for(inbox.get(), timeout=POLL_MS / 1000)
                except TimeoutError:
                    continue
                for item in tail.items(event):
                    yield sse(item.kind, item)
            for kind, item in final_items(call.result()):
                yield sse(kind, item)
        finally:
            if not call.done():
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await call


def sse(kind: str, item: BaseModel | dict[str, Any]) -> str:
    """One SSE frame: the item's `kind` as the event name, its JSON as the data."""
    data = item.model_dump_json() if isinstance(item, BaseModel) else json.dumps(item, ensure_ascii=False)
    return f"event: {kind}\ndata: {data}\n\n"


def final_items(result: CallToolResult) -> list[tuple[str, BaseModel | dict[str, Any]]]:
    """The X-ray and the answer of a finished `ask`, or its error."""
    body = result.structured_content or {}
    if result.is_error:
        return [("error", body)]
    answer = ChatAnswer.model_validate(body)
    return [("xray", XRayItem(xray=answer.xray)), ("answer", AnswerItem(answer=answer))]


class TraceTail:
    """Turns the events of one trace into stream items; other traces' events are ignored."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.requested: dict[str, Event] = {}

    def items(self, event: Event) -> list[ProgressItem | ToolCallItem]:
        """The items `event` stands for (none for most events)."""
        if event.trace_id != self.trace_id:
            return []
        data = event.data
        if isinstance(data, ToolRequested) and data.tool != ASK.name:
            self.requested[event.aggregate] = event
            return [ProgressItem(message=f"calling {data.tool}")]
        if isinstance(data, ToolSucceeded | ToolFailed) and event.aggregate in self.requested:
            return [ToolCallItem(tool=tool_record(self.requested.pop(event.aggregate), event))]
        message = _progress(data)
        return [ProgressItem(message=message)] if message else []


def _progress(data: object) -> str | None:
    if isinstance(data, LLMConversationStarted):
        return f"asking {data.describe()}"
    if isinstance(data, LLMAttempted):
        return data.describe()
    return None


def tool_record(requested: Event, outcome: Event) -> XRayTool:
    """One finished call as the X-ray shows it: params as run, request-to-outcome time, a response preview."""
    data, done = requested.payload(ToolRequested), outcome.payload(ToolSucceeded | ToolFailed)  # type: ignore[arg-type]
    if isinstance(done, ToolSucceeded):
        shown = done.text or json.dumps(done.result, separators=(",", ":"), default=str)
    else:
        shown = f"{done.code}: {done.message}"
    return XRayTool(
        name=data.tool,
        params=data.args,
        duration_ms=round(max(0.0, (outcome.ts - requested.ts).total_seconds() * 1000), 3),
        response_preview=shown if len(shown) <= PREVIEW_CHARS else shown[: PREVIEW_CHARS - 1] + "…",
        is_error=isinstance(done, ToolFailed),
    )
