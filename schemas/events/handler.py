"""Events of a result-handler run, on the call's own aggregate (`call:<id>`): started → succeeded | failed."""

from typing import Literal

from pydantic import JsonValue

from schemas.events.base import EventData
from schemas.events.tool import OutputRef
from schemas.ids import CallId
from schemas.result_handlers import HandlerLanguage


class HandlerStarted(EventData):
    """A sandbox worker took the handler job of a call whose tool succeeded. One per attempt."""

    type: Literal["handler.started"] = "handler.started"
    call_id: CallId
    language: HandlerLanguage
    worker: str
    attempt: str
    queue_wait_ms: float = 0.0
    """From the tool's `tool.succeeded` to the sandbox worker taking the handler job."""
    lease: str = ""
    """The liveness lease of the worker node running the handler (see `tool.started`)."""


class HandlerSucceeded(EventData):
    """The handler produced a JSON value; it is what the client gets instead of the raw output."""

    type: Literal["handler.succeeded"] = "handler.succeeded"
    call_id: CallId
    value: JsonValue = None
    """The handler's value, or None when it lives behind `value_ref` (larger than the inline limit)."""
    value_ref: OutputRef | None = None
    value_bytes: int
    """Size of the value as compact JSON."""
    raw: OutputRef
    """The tool's raw output (blob store, kept for `blob_ttl_s`), readable as `calls://<id>/raw`."""
    language: HandlerLanguage
    isolation: str
    seccomp: bool = False
    duration_ms: float
    tool_calls: int = 0
    stdout: str = ""
    worker: str = ""


class HandlerFailed(EventData):
    """The tool succeeded but its handler did not; `code` is a `handler.*` code (or `sandbox.unavailable`)."""

    type: Literal["handler.failed"] = "handler.failed"
    call_id: CallId
    code: str
    message: str
    line: int | None = None
    column: int | None = None
    exc_type: str | None = None
    retryable: bool = False
    raw: OutputRef | None = None
    """The tool's raw output, so the caller can retry with a fixed handler without re-running the tool."""
    language: HandlerLanguage
    isolation: str | None = None
    duration_ms: float = 0.0
    tool_calls: int = 0
    stdout: str = ""
    worker: str = ""


HANDLER_OUTCOME_TYPES = frozenset({"handler.succeeded", "handler.failed"})
