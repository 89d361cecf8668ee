"""The gate in a call's path: pass, obtain the justification in-call (sampling), or answer with the hint."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, InputRequiredResult

from gateway.preflight.gate import Gate
from gateway.preflight.persist import persist
from gateway.preflight.sampling import can_sample, is_modern, obtain_legacy, obtain_modern
from schemas.call_plan import CallPlan
from schemas.preflight.justification import PersistItem
from schemas.preflight.keys import Needed

SAMPLING_FAILED = "the client's model was asked and did not give a valid justification"
SERVER_FAILED = "the server-side model was asked and did not give a valid justification"


@dataclass
class GateOutcome:
    """Either an answer to return instead of running the tool, or the justifications that let it through."""

    answer: CallToolResult | InputRequiredResult | None = None
    justified_by: list[str] = field(default_factory=list)


ServerJustify = Callable[[Needed], Awaitable[dict[str, Any] | None]]
"""Asks the server-side model for one justification (None when it gave no valid one)."""


async def preflight(
    gate: Gate,
    plan: CallPlan,
    ctx: Context | None,
    actor: str,
    server_justify: ServerJustify | None = None,
) -> GateOutcome:
    """Check the cache (checked only after the arguments validated); a hit costs one pipelined read."""
    spec, needed = plan.spec, plan.needed
    if not needed:
        return GateOutcome()
    missing = await gate.missing(needed, actor)
    note = ""
    if missing and ctx is not None and can_sample(ctx):
        if not ctx.input_responses:
            await gate.record(spec, missing, actor)  # the hashes are issued before the model is asked
        if is_modern(ctx):
            ask = await obtain_modern(gate, missing, ctx, actor)
            if ask is not None:
                return GateOutcome(answer=ask)
        else:
            await obtain_legacy(gate, missing, ctx, actor)
        missing, note = await gate.missing(needed, actor), SAMPLING_FAILED
    elif missing and server_justify is not None:
        await gate.record(spec, missing, actor)
        for item in missing:
            if (value := await server_justify(item)) is not None:
                entry = PersistItem(hash=item.hash, domain=item.domain, justification=value)
                await persist(gate, [entry], actor=actor, source="server_llm")
        missing, note = await gate.missing(needed, actor), SERVER_FAILED
    if missing:
        return GateOutcome(answer=await gate.hint(spec, missing, actor, note))
    return GateOutcome(justified_by=[item.hash for item in needed])
