"""The workers' synchronous shell of the call plan: a tool call made by a job (`ask`'s loop, a result handler's
chained call) is planned, gated, appended with its queue message and awaited exactly as a client's call is.

The plan and the gate's decision are `schemas.call_plan` and `schemas.preflight.gate`, the same the gateway uses;
the outcome comes from this process's one reader of the calls stream (`workers.run.outcomes`).
"""

import queue
import time
from collections.abc import Callable
from typing import Any

from pydantic import JsonValue

from geogate.calls import keys
from geogate.calls.projections.justifications import JustificationState
from geogate.calls.publish import gate_events, new_event, request_effects, request_event
from geogate.calls.store import EventStore
from schemas.call_plan import CallPlan, plan_call
from schemas.events import Event, ToolFailed
from schemas.ids import call_aggregate, new_id
from schemas.preflight.gate import PreflightMissing, Verdict, judge, required
from schemas.scopes import spec_scope
from schemas.tools import ToolSpec
from workers.run.outcomes import waiter_for


class CallTimedOut(TimeoutError):
    """The called tool did not finish in time; `call_id` names it in the log."""

    code = "call.timeout"

    def __init__(self, call_id: str, timeout_s: float) -> None:
        super().__init__(f"call {call_id} did not finish within {timeout_s:g} s")
        self.call_id = call_id


def call_tool(
    store: EventStore,
    spec: ToolSpec,
    arguments: dict[str, JsonValue],
    *,
    actor: str,
    timeout_s: float,
    ttl_for: Callable[[str], float],
    trace_id: str | None = None,
    causation_id: str | None = None,
) -> Event:
    """Publish a call to `spec` and return its outcome event (`tool.succeeded` or `tool.failed`).

    `ttl_for` gives each justification domain's time to live (`Settings.justification_ttl`).

    Raises:
        schemas.validation.ArgumentsInvalid: the arguments do not fit the tool (nothing is published).
        PreflightMissing: a gated tool lacks a justification (its hashes are issued; nothing else is published).
        CallTimedOut: no outcome within `timeout_s`.
    """
    plan = plan_call(spec, arguments)
    if (refused := _outside_scopes(store, spec, actor)) is not None:
        return refused
    justified_by = gate(store, plan, actor, ttl_for)
    call_id = new_id()
    event = request_event(
        spec,
        plan.args,
        call_id=call_id,
        actor=actor,
        trace_id=trace_id,
        causation_id=causation_id,
        timeout_s=timeout_s,
        justified_by=justified_by,
    )
    waiter = waiter_for(store.redis, store.keys.stream(keys.CALLS))
    with waiter.watch(call_id) as inbox:
        effects = request_effects(event, plan.args, store.keys, store.dedupe_ttl_s)
        store.append(event, keys.requested_key(call_id), effects=effects)
        try:
            return inbox.get(timeout=timeout_s)
        except queue.Empty:  # a missed wake-up still finds the outcome in the log
            if (outcome := _logged_outcome(store, call_id)) is not None:
                return outcome
            raise CallTimedOut(call_id, timeout_s) from None


def gate(store: EventStore, plan: CallPlan, actor: str, ttl_for: Callable[[str], float]) -> list[str]:
    """The hashes that justify the call; expiries and the hashes issued for what is missing are appended.

    Raises:
        PreflightMissing: some justification is absent, pending, revoked or expired.
    """
    if not plan.needed:
        return []
    verdict = verdict_of(store, plan, ttl_for)
    issue(store, plan.spec, verdict, actor)
    if verdict.missing:
        raise PreflightMissing(plan.spec.name, verdict.missing)
    return [item.hash for item in plan.needed]


def verdict_of(store: EventStore, plan: CallPlan, ttl_for: Callable[[str], float]) -> Verdict:
    """The cache's verdict on the justifications `plan` needs; nothing is appended."""
    pipe = store.redis.pipeline(transaction=False)
    for item in plan.needed:
        pipe.hgetall(store.live.justification(item.hash))
    states = [JustificationState.from_hash(n.hash, raw) for n, raw in zip(plan.needed, pipe.execute(), strict=True)]
    return judge(plan.needed, states, time.time(), ttl_for)


def issue(store: EventStore, spec: ToolSpec, verdict: Verdict, actor: str) -> None:
    """Append `verdict`'s expiries and the hashes issued for what it misses (`preflight.required`)."""
    for event, key in gate_events(required(spec, verdict.missing), verdict.expired, actor):
        store.append(event, key)


def _logged_outcome(store: EventStore, call_id: str) -> Event | None:
    outcomes = [e for e in store.read_aggregate(call_aggregate(call_id)) if e.type in ("tool.succeeded", "tool.failed")]
    return outcomes[0] if outcomes else None


def _outside_scopes(store: EventStore, spec: ToolSpec, actor: str) -> Event | None:
    """A `tool.failed` (never appended) when the actor's token could not make this call itself.

    The gateway records the scopes of a client whose call delegates tool calls (`ask`, result handlers); without
    a record (authentication off) nothing is restricted.
    """
    raw: Any = store.redis.get(store.keys.client_scopes(actor))
    needed = spec_scope(spec)
    if raw is None or needed in raw.decode().split(","):
        return None
    call_id = new_id()
    message = f"{actor} may not call {spec.name}: it needs the scope {needed!r}, which the client's token lacks"
    return new_event(
        call_aggregate(call_id),
        ToolFailed(call_id=call_id, code="auth.insufficient_scope", message=message),
        actor=actor,
    )
