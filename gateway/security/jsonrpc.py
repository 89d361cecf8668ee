"""What an MCP HTTP request asks for: each JSON-RPC message's method, target and the scope it needs."""

from dataclasses import dataclass
from typing import Any

from schemas.scopes import LLM, Scope, method_scope, spec_scope, tool_scope
from schemas.tools import TOOLS
from schemas.tools.handlers import HANDLER_ARG, HANDLER_META

COUNTED_METHODS = frozenset({"tools/call", "resources/read"})
"""Methods that run work (a job, a read through a worker): they count against a client's limits."""


@dataclass(frozen=True)
class Need:
    """One message of a request as the guard sees it."""

    method: str
    target: str | None
    scope: Scope | None
    counted: bool
    delegates: bool = False
    """Workers will call tools on the client's behalf (`ask`, a result handler): they need its scopes."""
    request_id: Any = None


def _scope(name: str) -> Scope:
    spec = TOOLS.get(name)
    return spec_scope(spec) if spec is not None else tool_scope(name, writes_files=False)


def need_of(message: Any) -> Need | None:
    """The need of one JSON-RPC message, None when it is not an object with a string method."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None
    method, params = message["method"], message.get("params")
    params = params if isinstance(params, dict) else {}
    request_id = message.get("id")
    if method == "tools/call":
        name = params.get("name") if isinstance(params.get("name"), str) else ""
        scope = _scope(name)
        return Need(method, name, scope, True, scope == LLM or _has_handler(params), request_id)
    target = params.get("uri") if isinstance(params.get("uri"), str) else params.get("name")
    shown = target if isinstance(target, str) else None
    return Need(method, shown, method_scope(method), method in COUNTED_METHODS, False, request_id)


def _has_handler(params: dict[str, Any]) -> bool:
    arguments, meta = params.get("arguments"), params.get("_meta")
    in_arguments = isinstance(arguments, dict) and HANDLER_ARG in arguments
    return in_arguments or (isinstance(meta, dict) and HANDLER_META in meta)


def needs_of_frame(parsed: Any) -> list[Need]:
    """The needs of a parsed body (one message or a batch)."""
    messages = parsed if isinstance(parsed, list) else [parsed]
    return [need for message in messages if (need := need_of(message)) is not None]


def chat_need() -> Need:
    """`POST /api/chat[/stream]`: an `ask` call over plain HTTP."""
    return Need("POST /api/chat", "ask", LLM, True, True)


def route_need(path: str, scope: Scope) -> Need:
    """A plain HTTP route that needs `scope` and runs no call (`/metrics`)."""
    return Need(f"GET {path}", None, scope, False)
