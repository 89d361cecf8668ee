"""`Host` and `Origin` checks against DNS rebinding, on every route but `/health` (421 and 403, as the SDK answers).

The SDK's own check covers only the MCP endpoint and ties the two lists together; this one covers `/api/chat` and
`/metrics` too, and on a non-loopback bind without a host list it still checks browser origins.
"""

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

EXEMPT = frozenset({"/health"})


def matches(value: str, allowed: list[str]) -> bool:
    """Exact match, or `name:*` matching `name` with any port (or none)."""
    for pattern in allowed:
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-2]
            if value == base or (value.startswith(base + ":") and value[len(base) + 1 :].isdigit()):
                return True
    return False


class HostOriginCheck:
    """Refuses a request whose `Host` is not allowed (421) or whose `Origin` is not allowed (403)."""

    def __init__(self, app: ASGIApp, hosts: list[str], origins: list[str]) -> None:
        self.app, self.hosts, self.origins = app, hosts, origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in EXEMPT:
            headers = Headers(scope=scope)
            host, origin = headers.get("host", ""), headers.get("origin")
            if self.hosts and not matches(host, self.hosts):
                await PlainTextResponse(f"Host {host!r} is not allowed", status_code=421)(scope, receive, send)
                return
            if origin is not None and not matches(origin, self.origins):
                await PlainTextResponse(f"Origin {origin!r} is not allowed", status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)
