"""The gate in a call's path: pass, obtain the justification in-call (sampling), or answer with the hint."""

from dataclasses import dataclass, field

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, InputRequiredResult

from eventlog.preflight import needed_for
from gateway.reflection.gate import Gate
from gateway.reflection.sampling import can_sample, is_modern, obtain_legacy, obtain_modern
from schemas.tools import ToolSpec

SAMPLING_FAILED = "the client's model was asked and did not give a valid justification"


@dataclass
class GateOutcome:
    """Either an answer to return instead of running the tool, or the justifications that let it through."""

    answer: CallToolResult | InputRequiredResult | None = None
    justified_by: list[str] = field(default_factory=list)


async def preflight(gate: Gate, spec: ToolSpec, args: dict, ctx: Context | None, actor: str) -> GateOutcome:
    """Check the cache (checked only after the arguments validated); a hit costs one pipelined read."""
    needed = needed_for(spec, args)
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
    if missing:
        return GateOutcome(answer=await gate.hint(spec, missing, actor, note))
    return GateOutcome(justified_by=[item.hash for item in needed])
