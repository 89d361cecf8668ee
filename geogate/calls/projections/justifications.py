"""The justification cache: one hash per justification (`…:p:justification:<hash>`) and the calls that used it."""

import json
from typing import Any

from pydantic import BaseModel

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.registry import projector
from geogate.eventlog.append import Op, hset
from schemas.events import (
    Event,
    JustificationExpired,
    JustificationPersisted,
    JustificationRevoked,
    PreflightRequired,
    ToolRequested,
)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@projector("preflight.required")
def _required(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(PreflightRequired)
    key = keys.justification(data.hash)
    issued = {"domain": data.domain, "prompt": data.prompt, "prompt_args": _json(data.prompt_args)}
    return [Op("HSETNX", key, ("status", "pending")), hset(key, {**issued, "issued_at": event.ts.isoformat()})]


@projector("justification.persisted")
def _persisted(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(JustificationPersisted)
    update = {
        "status": "persisted",
        "domain": data.domain,
        "prompt": data.prompt,
        "prompt_args": _json(data.prompt_args),
        "justification": _json(data.justification),
        "source": data.source,
        "actor": event.actor,
        "persisted_at": event.ts.isoformat(),
        "persisted_ts": repr(event.ts.timestamp()),
    }
    return [hset(keys.justification(data.hash), update)]


@projector("justification.revoked")
def _revoked(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(JustificationRevoked)
    update = {"status": "revoked", "revoked_at": event.ts.isoformat(), "revoked_by": event.actor, "reason": data.reason}
    return [hset(keys.justification(data.hash), update)]


@projector("justification.expired")
def _expired(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(JustificationExpired)
    return [hset(keys.justification(data.hash), {"status": "expired", "expired_at": event.ts.isoformat()})]


@projector("tool.requested")
def _used(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolRequested)
    return [Op("SADD", keys.justification_calls(digest), (data.call_id,)) for digest in data.justified_by]


class JustificationState(BaseModel):
    """A cache entry as the gateway reads it."""

    hash: str
    status: str
    domain: str = ""
    prompt: str = ""
    prompt_args: dict[str, Any] = {}
    justification: dict[str, Any] | None = None
    source: str = ""
    actor: str = ""
    persisted_at: str = ""
    persisted_ts: float = 0.0
    revoked_at: str = ""

    @classmethod
    def from_hash(cls, digest: str, raw: dict[bytes, bytes]) -> "JustificationState | None":
        if not raw:
            return None
        h = {k.decode(): v.decode() for k, v in raw.items()}
        return cls(
            hash=digest,
            status=h.get("status", "pending"),
            domain=h.get("domain", ""),
            prompt=h.get("prompt", ""),
            prompt_args=json.loads(h.get("prompt_args", "{}")),
            justification=json.loads(h["justification"]) if "justification" in h else None,
            source=h.get("source", ""),
            actor=h.get("actor", ""),
            persisted_at=h.get("persisted_at", ""),
            persisted_ts=float(h.get("persisted_ts", "0")),
            revoked_at=h.get("revoked_at", ""),
        )

    def valid(self, now_ts: float, ttl_s: float) -> bool:
        """Persisted, not revoked, and younger than the domain's time to live."""
        return self.status == "persisted" and now_ts - self.persisted_ts < ttl_s
