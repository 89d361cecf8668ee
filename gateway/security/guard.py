"""The guard in front of each protected route: authentication, scopes, per-client limits, `call.rejected` for ops.

It runs after the SDK's authentication middleware has verified the bearer token (so `scope["user"]` holds the
client) and before the MCP transport. A refused request appends nothing but a `call.rejected` event.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from redis.exceptions import RedisError
from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.map_tickets import HEADER, Tickets
from gateway.security import responses
from gateway.security.frames import FrameError, check_body
from gateway.security.jsonrpc import Need, chat_need, needs_of_frame, route_need
from gateway.security.tokens import ClientLimits
from geogate.calls import keys
from geogate.calls.keys import rejected_key
from geogate.calls.publish import new_event
from geogate.ratelimit import Decision, Limiter, Limits
from geogate.settings import SecuritySettings
from schemas.events.security import CallRejected, RejectReason, client_aggregate
from schemas.scopes import ADMIN, ALL_SCOPES, READ

if TYPE_CHECKING:
    from gateway.runtime import Gateway

logger = logging.getLogger(__name__)

ANONYMOUS = "anonymous"
SCOPES_TTL_S = 86400
RouteKind = Literal["mcp", "chat", "admin", "tiles"]


@dataclass(frozen=True)
class Principal:
    """The verified client of a request (`anonymous` with every scope when authentication is off)."""

    client_id: str
    scopes: frozenset[str]


@dataclass(frozen=True)
class Policy:
    """What the guards enforce, built once from the settings."""

    security: SecuritySettings
    auth: bool
    overrides: Callable[[str], ClientLimits]
    metadata_url: str | None
    stale_s: float
    """How long a call slot may be held before it is taken for a replica's leftover."""

    @property
    def inspects(self) -> bool:
        """Whether requests need reading at all (no auth and no limits: the guard stays out of the way)."""
        return self.auth or self.security.rate_limit_per_minute > 0 or self.security.max_concurrent_calls > 0

    def limits(self, client_id: str) -> Limits:
        own = self.overrides(client_id)
        rate = own.rate_per_minute if own.rate_per_minute is not None else self.security.rate_limit_per_minute
        concurrent = own.max_concurrent if own.max_concurrent is not None else self.security.max_concurrent_calls
        return Limits(rate, concurrent)


def principal(scope: Scope, auth: bool) -> Principal | None:
    """The request's client, or None when authentication is on and no valid token came with it."""
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return Principal(user.access_token.client_id, frozenset(user.scopes))
    return None if auth else Principal(ANONYMOUS, frozenset(ALL_SCOPES))


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """Read the whole body (bounded by the body-size middleware in front) and a `receive` that replays it."""
    chunks: list[bytes] = []
    pending: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending.append(message)
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending.insert(0, {"type": "http.request", "body": body, "more_body": False})

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay


class Guard:
    """ASGI wrapper of one route's app (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: Policy, runtime: "Gateway", kind: RouteKind) -> None:
        self.app, self.policy, self.runtime, self.kind = app, policy, runtime, kind
        self._limiter: Limiter | None = None
        self._tickets: Tickets | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        who = principal(scope, self.policy.auth)
        if who is None and self.kind == "tiles":
            who = await self._ticket_holder(scope)
        if who is None:
            presented = Headers(scope=scope).get("authorization", "").lower().startswith("bearer ")
            await responses.unauthorized(send, self.policy.metadata_url, presented)
            return
        receive, needs, malformed = await self._needs(scope, receive)
        if malformed is not None:
            await responses.malformed(send, malformed.body())
            return
        if await self._refused_scope(who, needs, send):
            return
        decision = await self._take_slots(who, needs, send)
        if decision is not None and not decision.allowed:
            return
        if self.policy.auth and any(n.delegates for n in needs):
            await self._remember_scopes(who)
        try:
            await self.app(scope, receive, send)
        finally:
            if decision is not None and decision.slots:
                with anyio.CancelScope(shield=True):
                    await self.limiter().release(who.client_id, decision)

    async def _ticket_holder(self, scope: Scope) -> Principal | None:
        """A map's frame reading its own layers with the read ticket its `map_image` result carried."""
        ticket = Headers(scope=scope).get(HEADER)
        if not ticket or self.runtime.store is None:
            return None
        if self._tickets is None:
            self._tickets = Tickets(self.runtime.store.redis, self.runtime.store.keys)
        path = QueryParams(scope.get("query_string", b"")).get("path", "")
        holder = await self._tickets.holder(ticket, path)
        return Principal(holder, frozenset({READ})) if holder is not None else None

    async def _needs(self, scope: Scope, receive: Receive) -> tuple[Receive, list[Need], FrameError | None]:
        if self.kind == "chat":
            return receive, [chat_need()], None
        if self.kind == "admin":
            return receive, [route_need(scope["path"], ADMIN)], None
        if self.kind == "tiles":
            return receive, [route_need(scope["path"], READ)], None
        if scope["method"] != "POST":
            return receive, [], None
        body, replay = await _buffered(receive)
        frame, malformed = check_body(body)
        if malformed is not None or not self.policy.inspects:
            return replay, [], malformed
        return replay, needs_of_frame(frame), None

    async def _refused_scope(self, who: Principal, needs: list[Need], send: Send) -> bool:
        if not self.policy.auth:
            return False
        for need in needs:
            if need.scope is not None and need.scope not in who.scopes:
                await self._record(who.client_id, need, "scope", needed_scope=need.scope)
                what = f"{need.method} {need.target}" if need.target else need.method
                await responses.insufficient_scope(send, need.scope, what, self.policy.metadata_url)
                return True
        return False

    async def _take_slots(self, who: Principal, needs: list[Need], send: Send) -> Decision | None:
        counted = [n for n in needs if n.counted]
        limits = self.policy.limits(who.client_id)
        if not counted or not limits.any:
            return None
        decision = await self.limiter().acquire(who.client_id, limits, len(counted))
        if decision.allowed:
            return decision
        first = counted[0]
        limit = limits.per_minute if decision.reason == "rate_limit" else limits.concurrent
        reason: RejectReason = "rate_limit" if decision.reason == "rate_limit" else "concurrency"
        await self._record(who.client_id, first, reason, limit=limit, retry_after_s=decision.retry_after_s)
        what = "calls per minute" if reason == "rate_limit" else "calls in progress"
        message = f"{who.client_id} is over its limit of {limit} {what}; retry after {decision.retry_after_s} s"
        data = {"reason": reason, "limit": limit, "client_id": who.client_id}
        await responses.too_many(send, message, decision.retry_after_s, first.request_id, data)
        return decision

    def limiter(self) -> Limiter:
        if self._limiter is None:
            store = self.runtime.store
            assert store is not None, "gateway not started"
            self._limiter = Limiter(store.redis, store.keys, keys.CALLS, stale_s=self.policy.stale_s)
        return self._limiter

    async def _remember_scopes(self, who: Principal) -> None:
        """Workers calling tools for this client (LLM host, handler chaining) hold them to the same scopes."""
        assert self.runtime.store is not None
        key = self.runtime.store.keys.client_scopes(who.client_id)
        await self.runtime.store.redis.set(key, ",".join(sorted(who.scopes)), ex=SCOPES_TTL_S)

    async def _record(self, client_id: str, need: Need, reason: RejectReason, **details: Any) -> None:
        store = self.runtime.store
        if store is None:
            return
        data = CallRejected(client_id=client_id, method=need.method, target=need.target, reason=reason, **details)
        event = new_event(client_aggregate(client_id), data, actor=client_id)
        try:
            await store.append(event, rejected_key(client_id, reason, int(time.time())))
        except RedisError:  # the refusal stands whether or not ops hear of it
            logger.warning("could not record a call.rejected event for %s", client_id, exc_info=True)
