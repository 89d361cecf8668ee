"""JSON-RPC frames checked before the SDK sees them, so every malformed one gets an error naming the member at fault.

The SDK refuses the same frames, but with `Parse error` or `Body must be a single JSON-RPC request…` for all of
them. The answer here says which member is wrong, in `message` and `data.field`.
"""

from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
NAMED_PARAMS: dict[str, tuple[tuple[str, type | tuple[type, ...]], ...]] = {
    "tools/call": (("name", str), ("arguments", dict)),
    "resources/read": (("uri", str),),
    "prompts/get": (("name", str), ("arguments", dict)),
}
"""Members of `params` whose type the method needs (a wrong one would fail deep inside the SDK)."""


@dataclass(frozen=True)
class FrameError:
    """Why a frame is refused: the JSON-RPC error and the id to answer with."""

    code: int
    message: str
    field: str
    request_id: Any = None

    def body(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message, "data": {"field": self.field}}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}


def check_body(body: bytes) -> tuple[Any, FrameError | None]:
    """The parsed frame and, when it is malformed, the error that names the member at fault.

    Parsed with `pydantic_core.from_json`, the parser the SDK uses, so both refuse the same bodies (lone
    surrogates, invalid UTF-8, nesting deeper than its recursion limit).
    """
    try:
        frame = from_json(body)
    except ValueError as exc:
        return None, FrameError(PARSE_ERROR, f"Parse error: the body is not JSON ({exc})", "body")
    return frame, check_frame(frame)


def check_frame(frame: Any) -> FrameError | None:
    """The error of a parsed frame, None when it is well-formed enough for the SDK to judge."""
    if isinstance(frame, list):
        why = "Invalid Request: batches are not supported (removed in MCP 2025-06-18); send one message per POST"
        return FrameError(INVALID_REQUEST, why, "body")
    if not isinstance(frame, dict):
        return FrameError(INVALID_REQUEST, "Invalid Request: the body must be a JSON-RPC object", "body")
    request_id = frame.get("id")
    if "id" in frame and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        return FrameError(
            INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer (MCP: never null)", "id"
        )
    answer_id = request_id if isinstance(request_id, str | int) else None
    if frame.get("jsonrpc") != "2.0":
        return FrameError(INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"", "jsonrpc", answer_id)
    if "method" not in frame and ("result" in frame or "error" in frame):
        return None  # a client's response to a server request (legacy sessions)
    if not isinstance(frame.get("method"), str):
        return FrameError(INVALID_REQUEST, "Invalid Request: 'method' must be a string", "method", answer_id)
    return _check_params(frame, answer_id)


def _check_params(frame: dict[str, Any], request_id: Any) -> FrameError | None:
    if "params" not in frame:
        return None
    params = frame["params"]
    if not isinstance(params, dict):
        return FrameError(INVALID_PARAMS, "Invalid params: 'params' must be an object", "params", request_id)
    for name, kind in NAMED_PARAMS.get(frame["method"], ()):
        if name in params and not isinstance(params[name], kind):
            what = "an object" if kind is dict else "a string"
            return FrameError(
                INVALID_PARAMS, f"Invalid params: 'params.{name}' must be {what}", f"params.{name}", request_id
            )
    return None
