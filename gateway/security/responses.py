"""The refusals the gateway sends before a request reaches MCP: 401, 403 (insufficient scope) and 429."""

import json
from typing import Any

from starlette.types import Send

RATE_LIMITED = -32029
"""JSON-RPC error code of a refused call (server-defined range), alongside HTTP 429."""


def _challenge(error: str, description: str, metadata_url: str | None, scope: str | None = None) -> str:
    parts = [f'error="{error}"', f'error_description="{description}"']
    if scope:
        parts.append(f'scope="{scope}"')
    if metadata_url:
        parts.append(f'resource_metadata="{metadata_url}"')
    return "Bearer " + ", ".join(parts)


async def _send(send: Send, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


async def unauthorized(send: Send, metadata_url: str | None, presented: bool) -> None:
    """401: no token, or one the gateway does not accept (RFC 6750, with the protected-resource metadata)."""
    description = "the bearer token is not valid" if presented else "a bearer token is required"
    challenge = _challenge("invalid_token", description, metadata_url)
    body = {"error": "invalid_token", "error_description": description}
    await _send(send, 401, body, {"WWW-Authenticate": challenge})


async def insufficient_scope(send: Send, scope: str, what: str, metadata_url: str | None) -> None:
    """403 with the scope the request needs (MCP authorization: step-up by `insufficient_scope`)."""
    description = f"{what} needs the scope {scope!r}, which this token does not carry"
    body = {"error": "insufficient_scope", "error_description": description, "scope": scope}
    challenge = _challenge("insufficient_scope", description, metadata_url, scope)
    await _send(send, 403, body, {"WWW-Authenticate": challenge})


async def malformed(send: Send, body: dict[str, Any]) -> None:
    """400 with a JSON-RPC error naming the member of the frame at fault (`gateway.security.frames`)."""
    await _send(send, 400, body, {})


async def too_many(send: Send, message: str, retry_after_s: int, request_id: Any, data: dict[str, Any]) -> None:
    """429 with `Retry-After`; the body is a JSON-RPC error for the request, so MCP clients can show it."""
    error = {"code": RATE_LIMITED, "message": message, "data": {**data, "retry_after_s": retry_after_s}}
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    await _send(send, 429, body, {"Retry-After": str(retry_after_s)})
