"""One handler run in a freshly forked child: confine, execute the script, report one frame, exit."""

import ast
import builtins
import io
import json
import mmap
import os
import sys
import traceback
from typing import Any

from . import guard
from .framing import write_frame
from .proxy import Channel, ToolError, Tools

FILENAME = "<handler>"
RESERVE_BYTES = 4 * 1024 * 1024
_MISSING = object()


class HandlerFault(Exception):
    """A failure with a stable code, reported to the host as the run's error."""

    def __init__(self, code: str, message: str, line: int | None = None, exc_type: str | None = None) -> None:
        super().__init__(message)
        self.error = {"code": code, "message": message[:2000], "line": line, "exc_type": exc_type}


class CappedText(io.StringIO):
    """`sys.stdout` for the handler: keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.dropped = 0

    def write(self, text: str) -> int:
        room = max(self.limit - self.tell(), 0)
        self.dropped += max(len(text) - room, 0)
        return super().write(text[:room]) if room else 0

    def text(self) -> str:
        suffix = f"\n[{self.dropped} more characters dropped]" if self.dropped else ""
        return self.getvalue() + suffix


def prepare() -> tuple[str, ...]:
    """The part of confinement that needs no request, done while the child waits for one: no stdio to the
    host, the forbidden modules forgotten. Returns the directories a handler may read (for the audit hook)."""
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # stray writes to fd 1 must never reach the host protocol
    os.close(devnull)
    for name in [m for m in sys.modules if m.partition(".")[0] in guard.FORBIDDEN_IMPORTS]:
        del sys.modules[name]  # a fresh import then fires the audit event and is refused
    return guard.stdlib_prefixes()


def run(
    request: dict[str, Any], channel: Channel, seccomp: guard.SeccompFilter, audit: bool, readable: tuple[str, ...]
) -> None:
    """Run the request's script and write one `done` frame to the channel; never returns. `prepare()` ran."""
    reserve = mmap.mmap(-1, RESERVE_BYTES)  # address space only (never touched); unmapped on MemoryError
    stdout = CappedText(int(request["limits"]["max_stdout_bytes"]))
    try:
        _confine(request, seccomp, audit, stdout, readable)
        reply: dict[str, Any] = {"op": "done", "ok": True, "value": _result(request, channel)}
    except HandlerFault as fault:
        reply = {"op": "done", "ok": False, "error": fault.error}
    except MemoryError:
        reserve.close()  # gives back address space under RLIMIT_AS so the report itself can be built
        reply = {"op": "done", "ok": False, "error": _memory_error()}
    except BaseException as exc:  # the top of a throwaway process: every escape becomes a report
        reply = {"op": "done", "ok": False, "error": _classify(exc)}
    reply["stdout"] = stdout.text()
    write_frame(channel.write_fd, reply)
    os._exit(0)


def _confine(
    request: dict[str, Any], seccomp: guard.SeccompFilter, audit: bool, stdout: CappedText, readable: tuple[str, ...]
) -> None:
    sys.stdout = sys.stderr = stdout
    guard.apply_rlimits(request["limits"])  # after the request: the tool output is not the handler's memory
    seccomp.load()
    if audit:
        guard.install_audit_hook(readable)


def _result(request: dict[str, Any], channel: Channel) -> Any:
    body, last = _compile(request["script"])
    namespace: dict[str, Any] = {
        "__name__": "__handler__",
        "__builtins__": builtins,
        "tool_output": request["tool_output"],
        "tools": Tools(channel, request.get("tools", {})),
    }
    exec(body, namespace)
    value = eval(last, namespace) if last is not None else _MISSING
    if value is _MISSING or (value is None and "result" in namespace):
        value = namespace.get("result", value)
    if value is _MISSING:
        raise HandlerFault("handler.no_result", "the script ends with no expression and sets no `result`")
    return _checked_json(value, int(request["limits"]["max_output_bytes"]))


def _compile(source: str) -> tuple[Any, Any]:
    try:
        tree = ast.parse(source, FILENAME)
    except SyntaxError as exc:
        raise HandlerFault(
            "handler.syntax_error", f"{exc.msg} (line {exc.lineno})", exc.lineno, "SyntaxError"
        ) from None
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), FILENAME, "eval")
    return compile(tree, FILENAME, "exec"), last


def _checked_json(value: Any, limit: int) -> Any:
    try:
        size = len(json.dumps(value, allow_nan=False, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError) as exc:
        kind = type(value).__name__
        raise HandlerFault("handler.not_json", f"the result ({kind}) is not JSON-serialisable: {exc}") from None
    if size > limit:
        raise HandlerFault("handler.output_too_large", f"the result is {size} bytes of JSON; the limit is {limit}")
    return value


def _memory_error() -> dict[str, Any]:
    return HandlerFault("handler.memory_limit", "the handler ran out of memory", exc_type="MemoryError").error


def _classify(exc: BaseException) -> dict[str, Any]:
    line = _handler_line(exc)
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ToolError):
        return HandlerFault("handler.tool_error", text, line, "ToolError").error
    if isinstance(exc, OSError):  # handlers have no files, sockets or processes; any OSError is the wall
        return HandlerFault("handler.forbidden", text, line, type(exc).__name__).error
    return HandlerFault("handler.exception", text, line, type(exc).__name__).error


def _handler_line(exc: BaseException) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
    return frames[-1].lineno if frames else None
