"""Events of the justification aggregate (`justification:<hash>`): required → persisted → revoked."""

from typing import Literal

from pydantic import Field, JsonValue

from schemas.events.base import EventData


def justification_aggregate(digest: str) -> str:
    return f"justification:{digest}"


class PreflightRequired(EventData):
    """A gated call found no valid justification for this hash; the client was told what to do."""

    type: Literal["preflight.required"] = "preflight.required"
    hash: str
    domain: str
    prompt: str
    prompt_args: dict[str, JsonValue]
    tool: str


class JustificationPersisted(EventData):
    """A validated justification entered the cache (from the client, or obtained by sampling)."""

    type: Literal["justification.persisted"] = "justification.persisted"
    hash: str
    domain: str
    prompt: str
    prompt_args: dict[str, JsonValue]
    justification: dict[str, JsonValue]
    source: Literal["client", "sampling", "server_llm"] = "client"


class JustificationRevoked(EventData):
    """An administrator withdrew a justification; calls that need it are gated again."""

    type: Literal["justification.revoked"] = "justification.revoked"
    hash: str
    reason: str = Field(default="revoked", max_length=500)


class JustificationExpired(EventData):
    """A gated call found this justification older than its domain's time to live."""

    type: Literal["justification.expired"] = "justification.expired"
    hash: str
