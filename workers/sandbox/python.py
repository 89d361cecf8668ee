"""Python handlers: `PythonSandbox` runs scripts in a long-lived sandbox server that forks a child per run."""

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from schemas.result_handlers import HandlerError, HandlerErrorCode, HandlerLimits, HandlerOutcome, Isolation
from workers.sandbox.bridge import ToolBridge
from workers.sandbox.isolation import SandboxConfig, detect, require_seccomp
from workers.sandbox.process import SandboxProcess

HOST_GRACE_S = 2.0
"""The server enforces the wall-clock limit; the host waits this much longer before killing the whole sandbox."""
FRAME_SLACK = 256 * 1024


class PythonSandbox:
    """Runs Python result handlers in isolation. One per process; safe after fork (e.g. Celery prefork).

    The server starts lazily on first use and again whenever it has died (a handler cannot kill it through
    the kernel's walls, but the host restarts it all the same). Runs are serialised by a lock.

    Args:
        config: how to build the sandbox; defaults probe the strongest isolation available.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._process: SandboxProcess | None = None
        self._lock = threading.Lock()

    @property
    def isolation(self) -> Isolation:
        """The isolation level handlers run under here (probed once per process).

        Raises:
            SandboxUnavailable: no acceptable isolation works on this host.
        """
        return detect(self.config)

    @property
    def server_pid(self) -> int | None:
        """Host pid of the running sandbox server, if one was started by this process."""
        process = self._process
        return process.pid if process is not None and process.owner_pid == os.getpid() and process.alive else None

    def run(
        self,
        script: str,
        tool_output: Any,
        *,
        limits: HandlerLimits | None = None,
        tools: ToolBridge | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> HandlerOutcome:
        """Run one Python handler against `tool_output` and return its value or a coded error.

        Args:
            script: the handler's source; its last expression (or `result`) is the value.
            tool_output: injected as `tool_output`: parsed JSON for structured output, a string otherwise.
            limits: CPU, memory, wall-clock, output and tool-call limits.
            tools: the chaining bridge; without one, `tools` inside the handler is empty.
            meanwhile: the host's own work, done while the handler runs (after the request is sent, before the
                reply is read). If it raises, the sandbox server is discarded (its reply is never read) and the
                exception propagates.

        Returns:
            A `HandlerOutcome`; handler faults are outcomes, never exceptions.

        Raises:
            SandboxUnavailable: the sandbox cannot start on this host (retryable on another worker).
        """
        limits = limits or HandlerLimits()
        started = time.perf_counter()
        with self._lock:
            process = self._ensure()
            request = _request(script, tool_output, limits, tools, self.config)
            reply = self._exchange(process, request, limits, tools, meanwhile)
        return _outcome(reply, process, started, tools)

    def close(self) -> None:
        """Stop the sandbox server (a later `run` starts a new one)."""
        with self._lock:
            self._discard()

    def _ensure(self) -> SandboxProcess:
        if self._process is not None and self._process.owner_pid != os.getpid():
            self._process.abandon()  # inherited across fork: the parent's server, not ours
            self._process = None
        if self._process is None or not self._process.alive:
            self._discard()
            self._process = SandboxProcess(self.config, self.isolation)
            if not self._process.seccomp and not self.config.allow_weak:
                self._discard()
                require_seccomp(self.config, seccomp=False)
        return self._process

    def _discard(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process = None

    def _exchange(
        self,
        process: SandboxProcess,
        request: dict[str, Any],
        limits: HandlerLimits,
        tools: ToolBridge | None,
        meanwhile: Callable[[], object] | None = None,
    ) -> dict[str, Any]:
        deadline = time.monotonic() + limits.wall_seconds + HOST_GRACE_S
        cap = limits.max_output_bytes + 6 * limits.max_stdout_bytes + FRAME_SLACK
        sent = self._protocol(limits, lambda: process.send(request))
        if sent is not None:
            return sent
        if meanwhile is not None:
            try:
                meanwhile()  # not the sandbox's failure, whatever it raises: it propagates as it is
            except BaseException:
                self._discard()  # the run's reply stays unread: the next run gets a fresh server
                raise
        frames: list[dict[str, Any]] = []

        def converse() -> None:
            while (frame := process.read(cap, deadline)).get("op") == "tool":
                process.send(tools.handle(frame["name"], frame["args"]) if tools else _no_tools(frame["name"]))
            frames.append(frame)

        return self._protocol(limits, converse) or frames[0]

    def _protocol(self, limits: HandlerLimits, step: Callable[[], None]) -> dict[str, Any] | None:
        """Run one step of the exchange with the server; a failure reply when it timed out or broke, else None."""
        try:
            step()
        except TimeoutError:
            self._discard()
            return _failure("handler.timeout", f"the handler ran past its wall-clock limit ({limits.wall_seconds} s)")
        except (OSError, EOFError, ValueError, RecursionError, AttributeError, KeyError):
            self._discard()  # the server died or broke protocol: the next run gets a fresh one
            return _failure("handler.crashed", "the sandbox server stopped during the run; it has been restarted")
        return None


def _request(
    script: str, tool_output: Any, limits: HandlerLimits, tools: ToolBridge | None, config: SandboxConfig
) -> dict[str, Any]:
    return {
        "op": "run",
        "script": script,
        "tool_output": tool_output,
        "limits": limits.model_dump(),
        "tools": tools.specs() if tools else {},
        "audit": config.audit_hook,
    }


def _no_tools(name: str) -> dict[str, Any]:
    return {"ok": False, "code": "tool.not_allowed", "message": f"no tools are callable from this handler ({name!r})"}


def _failure(code: HandlerErrorCode, message: str) -> dict[str, Any]:
    return {"op": "done", "ok": False, "error": {"code": code, "message": message}}


def _outcome(
    reply: dict[str, Any], process: SandboxProcess, started: float, tools: ToolBridge | None
) -> HandlerOutcome:
    error = _error(reply)
    return HandlerOutcome(
        value=reply.get("value") if error is None else None,
        error=error,
        language="python",
        isolation=process.isolation,
        seccomp=process.seccomp,
        duration_ms=(time.perf_counter() - started) * 1000,
        tool_calls=tools.used if tools else 0,
        stdout=str(reply.get("stdout", "")),
    )


def _error(reply: dict[str, Any]) -> HandlerError | None:
    if reply.get("ok") is True:
        return None
    try:  # the child writes this frame and could forge it: validate like any untrusted input
        return HandlerError.model_validate(reply.get("error"))
    except ValidationError:
        return HandlerError(code="handler.crashed", message="the handler sent a malformed report")


_SANDBOXES: dict[SandboxConfig, PythonSandbox] = {}


def get_sandbox(config: SandboxConfig | None = None) -> PythonSandbox:
    """The process-wide sandbox for `config`, created lazily (one server per worker process)."""
    config = config or SandboxConfig()
    if config not in _SANDBOXES:
        _SANDBOXES[config] = PythonSandbox(config)
    return _SANDBOXES[config]
