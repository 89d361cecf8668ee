"""One entry point for any result handler: dispatch on its language, always answer with a `HandlerOutcome`."""

import time
from collections.abc import Callable, Mapping
from typing import Any

from schemas.result_handlers import HandlerLimits, HandlerOutcome, ResultHandler
from workers.sandbox.bridge import CallTool, ToolBridge
from workers.sandbox.errors import HandlerFailed
from workers.sandbox.jmes import run_jmespath
from workers.sandbox.python import PythonSandbox, get_sandbox


def run_handler(
    handler: ResultHandler,
    tool_output: Any,
    *,
    limits: HandlerLimits | None = None,
    call_tool: CallTool | None = None,
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    sandbox: PythonSandbox | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> HandlerOutcome:
    """Run `handler` against a tool's output.

    Args:
        handler: the validated `result_handler` of the call.
        tool_output: parsed JSON when the tool's output is structured, its text otherwise.
        limits: resource limits; defaults from `HandlerLimits`.
        call_tool: callback for `tools.<name>(...)` inside Python handlers (through the event log).
        tool_schemas: allow-list for chaining, tool name -> JSON Schema of its arguments (read-only tools,
            never the handler's own tool).
        sandbox: the process's sandbox; defaults to `get_sandbox()`.
        meanwhile: the host's own work, done while a Python handler runs in the sandbox (before a JMESPath one).

    Returns:
        The handler's value, or an error with a stable `code`; `isolation` says how it was contained.

    Raises:
        SandboxUnavailable: Python handlers cannot be contained on this host.
    """
    limits = limits or HandlerLimits()
    if handler.language == "jmespath":
        if meanwhile is not None:
            meanwhile()
        return _jmespath(handler.source, tool_output, limits)
    bridge = ToolBridge(call_tool, tool_schemas or {}, limits.max_tool_calls) if call_tool else None
    box = sandbox or get_sandbox()
    return box.run(handler.source, tool_output, limits=limits, tools=bridge, meanwhile=meanwhile)


def _jmespath(expression: str, tool_output: Any, limits: HandlerLimits) -> HandlerOutcome:
    started = time.perf_counter()
    try:
        value, error = run_jmespath(expression, tool_output, limits), None
    except HandlerFailed as exc:
        value, error = None, exc.error
    elapsed = (time.perf_counter() - started) * 1000
    return HandlerOutcome(value=value, error=error, language="jmespath", isolation="in-process", duration_ms=elapsed)
