"""Result handlers: Python in a kernel sandbox with a fork server, JMESPath in-process, tool chaining.

Public API:
    run_handler(handler, tool_output, *, limits, call_tool, tool_schemas, sandbox) -> HandlerOutcome
    run_jmespath(expression, tool_output, limits) -> JSON value          (raises HandlerFailed)
    PythonSandbox(config).run(script, tool_output, *, limits, tools) -> HandlerOutcome
    get_sandbox(config) -> PythonSandbox                                 (one per process, lazy, fork-safe)
    ToolBridge(call_tool, schemas, budget)                               (allow-list + budget + argument checks)
    SandboxConfig, detect(config) -> isolation level
"""

from workers.sandbox.bridge import CallTool, ToolBridge
from workers.sandbox.errors import HandlerFailed, SandboxError, SandboxUnavailable
from workers.sandbox.isolation import SandboxConfig, detect
from workers.sandbox.jmes import run_jmespath
from workers.sandbox.python import PythonSandbox, get_sandbox
from workers.sandbox.run import run_handler

__all__ = [
    "CallTool",
    "HandlerFailed",
    "PythonSandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxUnavailable",
    "ToolBridge",
    "detect",
    "get_sandbox",
    "run_handler",
    "run_jmespath",
]
