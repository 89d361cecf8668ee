"""The fork server inside the sandbox: reads run requests on stdin, runs each in a fresh child, supervises it.

Every run gets a child of its own, used once. The next one is forked ahead, right after a run's reply is sent,
and waits idle for its request on a pipe: the fork (about 1 ms) and what confinement needs no request for (stdio
to /dev/null, forbidden modules forgotten: about 1 ms) are off the handler's path. The rest (rlimits, seccomp,
audit hook) follows once the request is read, so that the tool output is not counted as the handler's memory.
"""

import contextlib
import importlib
import os
import platform
import signal
import time
from dataclasses import dataclass
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
    spare = Spare.fork(seccomp)
    while (request := read_frame(0, MAX_REQUEST)) is not None:
        reply = serve(request, spare)
        write_frame(1, reply)
        spare.reap()  # after the reply: the host does not wait for it
        spare = Spare.fork(seccomp)
    spare.reap()


@dataclass(frozen=True)
class Spare:
    """A child forked ahead, blocked on its request pipe; used for one run."""

    pid: int
    requests: int
    """server -> child: the run request (one frame)"""
    replies: int
    """server -> child: replies to its tool calls"""
    results: int
    """child -> server: tool calls, then the `done` frame"""

    @classmethod
    def fork(cls, seccomp: guard.SeccompFilter) -> "Spare":
        req_read, req_write = os.pipe()
        cmd_read, cmd_write = os.pipe()
        res_read, res_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            for fd in (req_write, cmd_write, res_read):
                os.close(fd)
            readable = child.prepare()
            request = read_frame(req_read, MAX_REQUEST)
            if request is None:  # the server stopped before using it
                os._exit(0)
            os.close(req_read)
            child.run(request, Channel(cmd_read, res_write), seccomp, bool(request.get("audit", True)), readable)
        for fd in (req_read, cmd_read, res_write):
            os.close(fd)
        return cls(pid, req_write, cmd_write, res_read)

    def reap(self) -> None:
        """Kill the child if it still runs (a forged `done` must not leave it running), wait for it, close pipes."""
        _kill(self.pid)
        for fd in (self.requests, self.replies, self.results):
            with contextlib.suppress(OSError):
                os.close(fd)


def serve(request: dict[str, Any], spare: Spare) -> dict[str, Any]:
    """Hand one request to the spare child, relay its tool calls, and return its `done` frame (or a failure)."""
    limits = dict(request["limits"])
    try:
        write_frame(spare.requests, request)
    except BrokenPipeError:  # the spare died before its run
        return _error("handler.crashed", "the sandbox's next process was gone; it has been replaced")
    request.clear()  # the injected tool_output lives on only in the child
    return _supervise(spare.pid, spare.results, spare.replies, limits)


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
            return frame  # the server kills and reaps the child once the reply is sent
        _relay(frame, cmd_write)


def _relay(frame: dict[str, Any], cmd_write: int) -> None:
    write_frame(1, {"op": "tool", "name": str(frame.get("name")), "args": frame.get("args")})
    reply = read_frame(0, MAX_HOST_REPLY)
    if reply is None:
        raise SystemExit(0)  # the host went away: nothing left to serve
    with contextlib.suppress(BrokenPipeError):  # the child died meanwhile; the next read sees EOF
        write_frame(cmd_write, reply)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # reaped already (`_died`)
        os.wait4(pid, 0)


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
