"""Events of the client aggregate (`client:<id>`): requests the gateway refused, for ops (never the call itself)."""

from typing import Literal

from pydantic import Field

from schemas.events.base import EventData

RejectReason = Literal["rate_limit", "concurrency", "scope"]


def client_aggregate(client_id: str) -> str:
    """The aggregate of one authenticated client (or `anonymous`)."""
    return f"client:{client_id}"


class CallRejected(EventData):
    """The gateway refused a request before anything of it was appended (HTTP 429 or 403).

    At most one per client, reason and second is appended, so a client hammering past its limit cannot flood the log.
    """

    type: Literal["call.rejected"] = "call.rejected"
    client_id: str
    method: str
    """The MCP method (`tools/call`, `resources/read`) or the HTTP route (`POST /api/chat`)."""
    target: str | None = Field(default=None, max_length=300)
    """The tool name or resource URI, when there is one."""
    reason: RejectReason
    limit: int | None = None
    """The limit that was reached (calls per minute or concurrent calls)."""
    needed_scope: str | None = None
    retry_after_s: float | None = None
