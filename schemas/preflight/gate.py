"""The gate's decision, pure: given the needed justifications and what the cache holds, what is missing and what
has just expired. The gateway (async) and workers (sync) read the cache and append the effects; both decide here,
so a client's call, an `ask` and a handler's chained call see the same verdict under the same per-domain TTLs.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from schemas.events.justification import JustificationExpired, PreflightRequired
from schemas.preflight.keys import Needed
from schemas.tools import ToolSpec


class Cached(Protocol):
    """What the gate reads of a cached justification (the projection's state)."""

    hash: str
    status: str
    persisted_ts: float

    def valid(self, now_ts: float, ttl_s: float) -> bool: ...


@dataclass(frozen=True)
class Verdict:
    """The needed justifications that are absent, pending, revoked or expired, and those that expired just now."""

    missing: list[Needed]
    expired: list[tuple[JustificationExpired, float]]
    """Each expiry with the `persisted_ts` it ends: one `justification.expired` per persisted justification."""

    @property
    def passes(self) -> bool:
        return not self.missing


def judge(
    needed: Sequence[Needed], states: Sequence[Cached | None], now_ts: float, ttl_for: Callable[[str], float]
) -> Verdict:
    """Decide a call's gate from the cache states of its `needed` justifications (in the same order)."""
    missing: list[Needed] = []
    expired: list[tuple[JustificationExpired, float]] = []
    for item, state in zip(needed, states, strict=True):
        if state is not None and state.valid(now_ts, ttl_for(item.domain)):
            continue
        if state is not None and state.status == "persisted":
            expired.append((JustificationExpired(hash=state.hash), state.persisted_ts))
        missing.append(item)
    return Verdict(missing, expired)


def required(spec: ToolSpec, missing: Sequence[Needed]) -> list[PreflightRequired]:
    """`preflight.required` for each missing item: the hashes this server issues (and will accept)."""
    return [
        PreflightRequired(hash=n.hash, domain=n.domain, prompt=n.prompt, prompt_args=n.prompt_args, tool=spec.name)
        for n in missing
    ]


class PreflightMissing(Exception):
    """A gated tool was called without the justifications it needs; `required` lists them (hint shape)."""

    code = "preflight.required"

    def __init__(self, tool: str, missing: Sequence[Needed]) -> None:
        domains = ", ".join(item.domain for item in missing)
        super().__init__(f"{tool} needs justification(s) before it runs: {domains}")
        self.tool = tool
        self.required: list[dict[str, Any]] = [item.as_hint() for item in missing]
