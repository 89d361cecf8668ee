"""Turning outcome events (or the call projection) into MCP `CallToolResult`s."""

import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import JsonValue

from eventlog.projections.calls import CallState
from schemas.events import ToolFailed, ToolSucceeded
from schemas.validation import ArgumentsInvalid

META_KEY = "io.geogate/call"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def succeeded(call_id: str, data: ToolSucceeded, result: JsonValue, extra: dict[str, Any]) -> CallToolResult:
    content = [TextContent(type="text", text=data.text)] if data.text else []
    content.append(TextContent(type="text", text=_dumps(result)))
    meta = {META_KEY: {"call_id": call_id, "worker": data.worker, "duration_ms": data.duration_ms, **extra}}
    return CallToolResult(content=content, structured_content=result, _meta=meta)  # type: ignore[arg-type]


def failed(call_id: str, data: ToolFailed) -> CallToolResult:
    error = {
        "code": data.code,
        "message": data.message,
        "field": data.field,
        "retryable": data.retryable,
        "call_id": call_id,
    }
    return error_result(f"{data.message} (call {call_id}, {data.code})", error)


def invalid(exc: ArgumentsInvalid) -> CallToolResult:
    error = {"code": exc.code, "message": str(exc), "errors": [e.as_dict() for e in exc.errors]}
    return error_result(str(exc), error)


def timed_out(call_id: str, timeout_s: float) -> CallToolResult:
    message = (
        f"call {call_id} did not finish within {timeout_s:g} s; it keeps running and its outcome will be in the "
        f"event log (geogate events tail, aggregate call:{call_id})"
    )
    return error_result(message, {"code": "call.timeout", "message": message, "call_id": call_id, "retryable": True})


def from_state(state: CallState) -> CallToolResult:
    """A result rebuilt from the projection (duplicate idempotent calls, a missed wake-up)."""
    if state.status == "succeeded":
        data = ToolSucceeded(call_id=state.call_id, result=state.result, text=state.text, worker=state.worker)
        return succeeded(state.call_id, data, state.result, {"replayed": True})
    data_f = ToolFailed(
        call_id=state.call_id, code=state.error_code, message=state.error_message, field=state.error_field or None
    )
    return failed(state.call_id, data_f)


def error_result(text: str, error: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"error": error}, is_error=True
    )
