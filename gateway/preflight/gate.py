"""The preflight gate: which justifications a call needs, which are missing, and the hint that lists them all."""

import json
import time

from mcp.types import CallToolResult, TextContent

from geogate.calls.projections.justifications import JustificationState
from geogate.calls.publish import gate_events
from geogate.calls.store import AsyncEventStore
from geogate.settings import Settings
from schemas.preflight.gate import judge, required
from schemas.preflight.justification import EXAMPLE
from schemas.preflight.keys import Needed
from schemas.tools import ToolSpec


class Gate:
    """Reads the justification cache and records what was required, expired or used."""

    def __init__(self, store: AsyncEventStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    async def states(self, digests: list[str]) -> list[JustificationState | None]:
        pipe = self.store.redis.pipeline(transaction=False)
        for digest in digests:
            pipe.hgetall(self.store.live.justification(digest))
        return [JustificationState.from_hash(d, raw) for d, raw in zip(digests, await pipe.execute(), strict=True)]

    async def missing(self, needed: list[Needed], actor: str) -> list[Needed]:
        """The needed justifications that are absent, pending, revoked or expired (expiry is recorded)."""
        states = await self.states([n.hash for n in needed])
        verdict = judge(needed, states, time.time(), self.settings.justification_ttl)
        for event, key in gate_events([], verdict.expired, actor):
            await self.store.append(event, key)
        return verdict.missing

    async def hint(self, spec: ToolSpec, missing: list[Needed], actor: str, note: str = "") -> CallToolResult:
        """Record `preflight.required` for each missing item and answer with all of them at once."""
        await self.record(spec, missing, actor)
        return hint_result(spec, missing, note)

    async def record(self, spec: ToolSpec, missing: list[Needed], actor: str) -> None:
        """Append `preflight.required` for each item: the hashes this server issued (and will accept)."""
        for event, key in gate_events(required(spec, missing), [], actor):
            await self.store.append(event, key)


def hint_result(spec: ToolSpec, missing: list[Needed], note: str = "") -> CallToolResult:
    """A tool error whose `structuredContent.preflight` lists every missing justification, prompt rendered, with
    an example of a justification's four keys (also in the text)."""
    domains = ", ".join(item.domain for item in missing)
    text = (
        f"{spec.name} needs {len(missing)} justification(s) before it runs ({domains}). For each item in "
        "structuredContent.preflight.required, answer its `messages` with the JSON they ask for, then call "
        "persist_justifications(items=[{hash, domain, justification}, ...]) once with all of them, and retry "
        f"{spec.name} with the same arguments. A justification is a JSON object with four keys (intent, "
        f"alternatives, choice, confidence), for example: {json.dumps(EXAMPLE)}"
    )
    if note:
        text = f"{text} ({note})"
    preflight = {"tool": spec.name, "required": [item.as_hint() for item in missing], "example": EXAMPLE}
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"preflight": preflight}, is_error=True
    )
