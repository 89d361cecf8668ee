"""The `tools` object a handler sees: generated wrappers that forward calls to the host over a pipe."""

import inspect
import keyword
from collections.abc import Callable
from typing import Any

from .framing import read_frame, write_frame

MAX_TOOL_REPLY = 64 * 1024 * 1024
KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY


class ToolError(Exception):
    """A chained tool call was refused or failed; `code` says why (e.g. tool.not_allowed)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class Channel:
    """The child's end of the pipe pair to its server, which relays tool calls to the host."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd

    def call(self, name: str, args: dict[str, Any]) -> Any:
        write_frame(self.write_fd, {"op": "tool", "name": name, "args": args})
        reply = read_frame(self.read_fd, MAX_TOOL_REPLY)
        if not isinstance(reply, dict):
            raise ToolError("tool.failed", "the host sent no reply")
        if reply.get("ok"):
            return reply.get("value")
        raise ToolError(str(reply.get("code", "tool.failed")), str(reply.get("message", "")))


def _signature(spec: dict[str, Any]) -> inspect.Signature:
    required = set(spec.get("required", []))
    params = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=inspect.Parameter.empty if name in required else None
        )
        for name in sorted(spec.get("params", []), key=lambda n: (n not in required, n))
        if name.isidentifier() and not keyword.iskeyword(name)
    ]
    return inspect.Signature(params)


def make_wrapper(channel: Channel, name: str, spec: dict[str, Any]) -> Callable[..., Any]:
    """Build `name(**args)` whose signature follows the tool's argument schema; binds before sending."""
    signature = _signature(spec)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        unknown = sorted(set(kwargs) - set(signature.parameters))
        if args or unknown:
            problem = f"unexpected keyword argument(s) {unknown}" if unknown else "takes keyword arguments only"
            raise TypeError(f"tools.{name}(): {problem}; signature is {name}{signature}")
        try:
            bound = signature.bind(**kwargs)
        except TypeError as exc:
            raise TypeError(f"tools.{name}(): {exc}; signature is {name}{signature}") from None
        return channel.call(name, dict(bound.arguments))

    wrapper.__name__ = wrapper.__qualname__ = _attribute(name)
    wrapper.__dict__["__signature__"] = signature
    wrapper.__doc__ = spec.get("description") or f"Call the read-only tool {name!r}."
    return wrapper


def _attribute(name: str) -> str:
    attr = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return attr if attr.isidentifier() and not keyword.iskeyword(attr) else f"tool_{attr}"


class Tools:
    """Namespace of callable tools: `tools.raster_info(uri=...)` or `tools["raster.info"](uri=...)`."""

    def __init__(self, channel: Channel, specs: dict[str, dict[str, Any]]) -> None:
        self._wrappers = {name: make_wrapper(channel, name, spec) for name, spec in specs.items()}
        for name, wrapper in self._wrappers.items():
            setattr(self, _attribute(name), wrapper)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._wrappers[name]

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"no tool {name!r} is callable from a handler; callable: {sorted(self._wrappers)}")

    def __dir__(self) -> list[str]:
        return sorted(_attribute(n) for n in self._wrappers)

    def __repr__(self) -> str:
        return f"<tools {sorted(self._wrappers)}>"
