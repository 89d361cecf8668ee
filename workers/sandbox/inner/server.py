"""The fork server inside the sandbox: reads run requests on stdin, forks one child per handler, supervises it."""

import contextlib
import importlib
import os
import platform
import signal
import time
from typing import Any

from . import child, guard
from .framing import FrameTooLarge, read_frame, write_frame
from .proxy import Channel

MAX_REQUEST = 256 * 1024 * 1024
MAX_HOST_REPLY = 64 * 1024 * 1024
FRAME_OVERHEAD = 64 * 1024  # room for the envelope and captured stdout around the result itself
PRELOAD = (
    "json", "re", "math", "cmath", "statistics", "collections", "itertools", "functools", "operator", "datetime",
    "decimal", "fractions", "string", "textwrap", "csv", "io", "heapq", "bisect", "copy", "base64", "hashlib",
    "random", "dataclasses", "enum", "typing", "difflib", "pprint", "unicodedata", "zlib", "struct", "fnmatch",
)  # fmt: skip


def main() -> None:
    """Serve run requests until the host closes stdin."""
    for name in PRELOAD:  # imported once here so a handler's `import json` costs nothing after fork
        importlib.import_module(name)
    seccomp = guard.SeccompFilter()
    write_frame(1, {"op": "ready", "seccomp": seccomp.available, "python": platform.python_version()})
    while (request := read_frame(0, MAX_REQUEST)) is not None:
        write_frame(1, serve(request, seccomp))


def serve(request: dict[str, Any], seccomp: guard.SeccompFilter) -> dict[str, Any]:
    """Fork a child for one request, relay its tool calls, and return its `done` frame (or a failure)."""
    limits = dict(request["limits"])
    cmd_read, cmd_write = os.pipe()  # server -> child: replies to tool calls
    res_read, res_write = os.pipe()  # child -> server: tool calls, then the `done` frame
    pid = os.fork()
    if pid == 0:
        os.close(cmd_write)
        os.close(res_read)
        child.run(request, Channel(cmd_read, res_write), seccomp, bool(request.get("audit", True)))
    os.close(cmd_read)
    os.close(res_write)
    request.clear()  # the injected tool_output lives on only in the child
    try:
        return _supervise(pid, res_read, cmd_write, limits)
    finally:
        os.close(res_read)
        os.close(cmd_write)


def _supervise(pid: int, res_read: int, cmd_write: int, limits: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + float(limits["wall_seconds"])
    cap = int(limits["max_output_bytes"]) + 6 * int(limits["max_stdout_bytes"]) + FRAME_OVERHEAD
    while True:
        try:
            frame = read_frame(res_read, cap, deadline)
        except TimeoutError:
            return _end(
                pid, "handler.timeout", f"the handler ran past its wall-clock limit of {limits['wall_seconds']} s"
            )
        except FrameTooLarge as exc:
            return _end(pid, "handler.output_too_large", f"the handler's report is {exc.size} bytes; the cap is {cap}")
        except (EOFError, ValueError, RecursionError):
            return _end(pid, "handler.crashed", "the handler broke the reporting protocol")
        if frame is None:
            return _died(pid, limits)
        if not isinstance(frame, dict) or frame.get("op") not in ("tool", "done"):
            return _end(pid, "handler.crashed", "the handler sent an unknown frame")
        if frame["op"] == "done":
            _kill(pid)  # a forged `done` must not leave the child running
            return frame
        _relay(frame, cmd_write)


def _relay(frame: dict[str, Any], cmd_write: int) -> None:
    write_frame(1, {"op": "tool", "name": str(frame.get("name")), "args": frame.get("args")})
    reply = read_frame(0, MAX_HOST_REPLY)
    if reply is None:
        raise SystemExit(0)  # the host went away: nothing left to serve
    with contextlib.suppress(BrokenPipeError):  # the child died meanwhile; the next read sees EOF
        write_frame(cmd_write, reply)


def _kill(pid: int) -> tuple[int, Any]:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    return status, usage


def _end(pid: int, code: str, message: str) -> dict[str, Any]:
    _kill(pid)
    return _error(code, message)


def _died(pid: int, limits: dict[str, Any]) -> dict[str, Any]:
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    if os.WIFEXITED(status):
        return _error("handler.crashed", f"the handler exited with status {os.WEXITSTATUS(status)} before reporting")
    sig = os.WTERMSIG(status)
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= int(limits["cpu_seconds"])):
        return _error("handler.timeout", f"the handler used its CPU limit of {limits['cpu_seconds']} s")
    return _error("handler.crashed", f"the handler was killed by {signal.Signals(sig).name}")


def _error(code: str, message: str) -> dict[str, Any]:
    return {"op": "done", "ok": False, "error": {"code": code, "message": message}}
