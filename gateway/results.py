"""Turning outcome events (or the call projection) into MCP `CallToolResult`s."""

import json
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import JsonValue

from geogate.calls.projections.call_state import CallState
from geogate.calls.projections.handlers import HandlerState
from geogate.eventlog.redaction import redact, redact_text
from schemas.content import AudioBlock, ImageBlock, ResourceBlock
from schemas.content import ContentBlock as Block
from schemas.events import HandlerFailed, HandlerSucceeded, OutputRef, ToolFailed, ToolSucceeded
from schemas.tools.handlers import HANDLED_FIELD, HANDLER_META, raw_uri
from schemas.validation import ArgumentsInvalid

META_KEY = "io.geogate/call"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def succeeded(call_id: str, data: ToolSucceeded, result: JsonValue, extra: dict[str, Any]) -> CallToolResult:
    content: list[ContentBlock] = [TextContent(type="text", text=data.text)] if data.text else []
    content += [_block(block) for block in data.content]
    content.append(TextContent(type="text", text=_dumps(result)))
    meta = {META_KEY: {"call_id": call_id, "worker": data.worker, "duration_ms": data.duration_ms, **extra}}
    return CallToolResult(content=content, structured_content=result, _meta=meta)  # type: ignore[arg-type]


def _block(block: Block) -> ContentBlock:
    """An MCP content block for one the job returned (`schemas.content`)."""
    if isinstance(block, ImageBlock):
        return ImageContent(type="image", data=block.data, mime_type=block.mime_type)
    if isinstance(block, AudioBlock):
        return AudioContent(type="audio", data=block.data, mime_type=block.mime_type)
    if isinstance(block, ResourceBlock):
        resource: TextResourceContents | BlobResourceContents = (
            TextResourceContents(uri=block.uri, mime_type=block.mime_type, text=block.text)
            if block.text is not None
            else BlobResourceContents(uri=block.uri, mime_type=block.mime_type, blob=block.blob or "")
        )
        return EmbeddedResource(type="resource", resource=resource)
    return TextContent(type="text", text=block.text)


def failed(call_id: str, data: ToolFailed) -> CallToolResult:
    error = {
        "code": data.code,
        "message": data.message,
        "field": data.field,
        "retryable": data.retryable,
        "call_id": call_id,
    }
    if data.details is not None:  # what the client can act on: a plan's problems, what would be valid, the hints
        error["details"] = data.details
    result = error_result(f"{data.message} (call {call_id}, {data.code})", error)
    result.meta = {META_KEY: {"call_id": call_id, "worker": data.worker, "duration_ms": data.duration_ms}}
    return result


def invalid(exc: ArgumentsInvalid) -> CallToolResult:
    error = {"code": exc.code, "message": str(exc), "errors": [e.as_dict() for e in exc.errors]}
    return error_result(str(exc), error)


def timed_out(call_id: str, timeout_s: float) -> CallToolResult:
    message = (
        f"call {call_id} did not finish within {timeout_s:g} s; it keeps running and its outcome will be in the "
        f"event log (geogate events tail, aggregate call:{call_id})"
    )
    return error_result(message, {"code": "call.timeout", "message": message, "call_id": call_id, "retryable": True})


def task_created(call_id: str) -> CallToolResult:
    """What the tool returns when its call became a task; the tasks extension answers with the task instead."""
    return CallToolResult(content=[TextContent(type="text", text=f"call {call_id} continues as a task")], is_error=True)


def from_state(state: CallState) -> CallToolResult:
    """A result rebuilt from the projection (duplicate idempotent calls, a missed wake-up)."""
    if state.status == "succeeded":
        data = ToolSucceeded(
            call_id=state.call_id, result=state.result, text=state.text, content=state.content, worker=state.worker
        )
        return succeeded(state.call_id, data, state.result, {"replayed": True})
    data_f = ToolFailed(
        call_id=state.call_id, code=state.error_code, message=state.error_message, field=state.error_field or None
    )
    return failed(state.call_id, data_f)


def error_result(text: str, error: dict[str, Any]) -> CallToolResult:
    text, error = redact_text(text), redact(error)  # no secret goes back in an error either
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"error": error}, is_error=True
    )


def _raw(call_id: str, ref: OutputRef | None) -> dict[str, Any]:
    shown = {"uri": raw_uri(call_id)}
    return {**shown, "size": ref.size, "sha256": ref.sha256, "media_type": ref.media_type} if ref else shown


def handled(call_id: str, data: HandlerSucceeded, value: JsonValue) -> CallToolResult:
    """Only the handler's value, under `structuredContent.result`; the handler run and raw output in `_meta`."""
    run = {
        "applied": True,
        "language": data.language,
        "duration_ms": data.duration_ms,
        "isolation": data.isolation,
        "tool_calls": data.tool_calls,
        "value_bytes": data.value_bytes,
        "raw": _raw(call_id, data.raw),
        "note": "structuredContent.result is the handler's value; the tool's outputSchema does not describe it",
    }
    if data.stdout:
        run["stdout"] = data.stdout
    meta = {META_KEY: {"call_id": call_id, "worker": data.worker}, HANDLER_META: run}
    content = [TextContent(type="text", text=_dumps(value))]
    return CallToolResult(content=content, structured_content={HANDLED_FIELD: value}, _meta=meta)  # type: ignore[arg-type]


def handler_failed(call_id: str, data: HandlerFailed) -> CallToolResult:
    """A tool error saying the tool succeeded and its handler failed, with a link to the raw output."""
    where = f" at line {data.line}" if data.line else ""
    text = (
        f"the tool succeeded but the result handler failed{where}: {data.message} ({data.code}). The raw output is "
        f"at {raw_uri(call_id)}: fix the handler and run it again on that output instead of re-running the tool."
    )
    error = {
        **data.model_dump(mode="json", include={"code", "message", "line", "column", "exc_type", "retryable"}),
        "tool_succeeded": True,
        "stage": "result_handler",
        "field": "result_handler.script" if data.code.startswith("handler.") else "result_handler",
        "call_id": call_id,
        "raw": _raw(call_id, data.raw),
    }
    result = error_result(text, error)
    size = data.raw.size if data.raw else None
    link = ResourceLink(
        type="resource_link", name="raw_output", uri=raw_uri(call_id), mime_type="application/json", size=size
    )
    result.content.append(link)
    return result


def from_handler_state(state: HandlerState, value: JsonValue) -> CallToolResult:
    """A handler result rebuilt from its projection (duplicate idempotent calls, a missed wake-up).

    Args:
        state: the handler projection of the call; terminal.
        value: the handler's value (read from the blob store by the caller when the projection holds a reference).
    """
    if state.status == "succeeded" and state.raw is not None:
        data = HandlerSucceeded(
            call_id=state.call_id,
            value=value,
            value_bytes=state.value_bytes,
            raw=state.raw,
            language=state.language,  # type: ignore[arg-type]
            isolation="",
            duration_ms=state.duration_ms,
        )
        return handled(state.call_id, data, value)
    error = state.error or {}
    failed_data = HandlerFailed.model_validate(
        {**error, "call_id": state.call_id, "raw": state.raw, "language": state.language or "python"}
    )
    return handler_failed(state.call_id, failed_data)
