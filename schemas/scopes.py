"""Which OAuth scope a request needs: `read`, `write` (tools that write files), `llm` (`ask`), `admin`.

Both sides read this: the gateway refuses a request outside the client's scopes, and workers refuse the tool
calls they make on a client's behalf (the LLM host, handler chaining) when the client could not make them itself.
"""

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from schemas.tools.base import ToolSpec

Scope = Literal["read", "write", "llm", "admin"]

READ: Scope = "read"
WRITE: Scope = "write"
LLM: Scope = "llm"
ADMIN: Scope = "admin"
ALL_SCOPES: tuple[Scope, ...] = (READ, WRITE, LLM, ADMIN)

_TOOLS: dict[str, Scope] = {
    "ask": LLM,
    "revoke_justification": ADMIN,
    "persist_justification": WRITE,
    "persist_justifications": WRITE,
}
"""Tools whose scope is not told by their arguments."""

_METHODS: dict[str, Scope] = {
    "resources/read": READ,
    "resources/subscribe": READ,
    "subscriptions/listen": READ,
    "prompts/get": READ,
}
"""MCP methods that read server content; listing, discovery, ping and notifications need only a valid token."""


def tool_scope(name: str, writes_files: bool) -> Scope:
    """The scope a call to tool `name` needs; `writes_files` when its arguments name an output."""
    return _TOOLS.get(name, WRITE if writes_files else READ)


def method_scope(method: str) -> Scope | None:
    """The scope an MCP method other than `tools/call` needs, None when any authenticated client may use it."""
    return _METHODS.get(method)


def spec_scope(spec: "ToolSpec") -> Scope:
    """The scope a call to `spec` needs (a tool whose arguments name an `output` writes files)."""
    return tool_scope(spec.name, "output" in spec.args.model_fields)
