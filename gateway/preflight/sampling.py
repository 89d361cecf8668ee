"""In-call justification: the gateway asks the client's model itself (MRTR on 2026-07-28, sampling on legacy)."""

import json
from typing import Any

from mcp.server.mcpserver import Context
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import is_version_at_least

from gateway.preflight.gate import Gate
from gateway.preflight.persist import persist
from schemas.preflight.answers import parse_answer
from schemas.preflight.justification import PersistItem
from schemas.preflight.keys import Needed
from schemas.preflight.prompts import PROMPTS

SYSTEM = "You justify geospatial processing choices for an audit log. Answer with the requested JSON only."
MODERN = "2026-07-28"


def can_sample(ctx: Context | None) -> bool:
    if ctx is None:
        return False
    try:
        caps = ctx.client_capabilities
    except ValueError:
        return False
    return caps is not None and caps.sampling is not None


def is_modern(ctx: Context) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, MODERN)


def sampling_request(item: Needed, errors: list[str]) -> CreateMessageRequest:
    text = PROMPTS[item.prompt].render(item.prompt_args)
    if errors:
        text += "\n\nYour previous answer was rejected: " + "; ".join(errors) + ". Answer again, JSON only."
    message = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequest(
        params=CreateMessageRequestParams(messages=[message], system_prompt=SYSTEM, max_tokens=1024)
    )


def answer_text(result: Any) -> str:
    content = getattr(result, "content", None)
    blocks = content if isinstance(content, list) else [content]
    return "".join(getattr(b, "text", "") or "" for b in blocks)


async def _keep(gate: Gate, item: Needed, text: str, actor: str) -> list[str]:
    """Persist a sampled answer if it is valid; return what is wrong with it otherwise."""
    value, problems = parse_answer(text)
    if value is None:
        return problems
    entry = PersistItem(hash=item.hash, domain=item.domain, justification=value)
    errors = await persist(gate, [entry], actor=actor, source="sampling")
    return [f"{e.field}: {e.reason}" for e in errors]


async def obtain_modern(gate: Gate, missing: list[Needed], ctx: Context, actor: str) -> InputRequiredResult | None:
    """One MRTR round: ask for what is missing, or keep the answers that came back (one retry each).

    Returns the next `InputRequiredResult`, or None when nothing more can be asked (the caller re-checks
    the cache and falls back to the hint for what is still missing).
    """
    state = json.loads(ctx.request_state or '{"round": 0}')
    round_no, answers = int(state.get("round", 0)), ctx.input_responses or {}
    asks: dict[str, Any] = {}
    for item in missing:
        errors = ["no answer"] if round_no else []
        if round_no and (answer := answers.get(f"j{round_no - 1}-{item.hash[:16]}")) is not None:
            errors = await _keep(gate, item, answer_text(answer), actor)
            if not errors:
                continue
        if round_no < 2:
            asks[f"j{round_no}-{item.hash[:16]}"] = sampling_request(item, errors)
    if not asks:
        return None
    return InputRequiredResult(input_requests=asks, request_state=json.dumps({"round": round_no + 1}))


async def obtain_legacy(gate: Gate, missing: list[Needed], ctx: Context, actor: str) -> None:
    """Ask the client's model over the session back-channel, one retry with the errors per justification."""
    for item in missing:
        errors: list[str] = []
        for _attempt in range(2):
            result = await ctx.session.send_request(
                sampling_request(item, errors),
                CreateMessageResult,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            errors = await _keep(gate, item, answer_text(result), actor)
            if not errors:
                break
