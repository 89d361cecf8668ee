"""Safety limits enforced by the loop: blocked tools, the call budget, token estimates and history trimming."""

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from workers.llm.providers.base import Message

CHARS_PER_TOKEN = 4
"""A conservative estimate without a tokenizer (English text and JSON run 3.5–4.5 characters per token)."""
MESSAGE_OVERHEAD_TOKENS = 4
_TRIMMED = " …[trimmed]"


def offered_tools(tools: Sequence[dict[str, Any]], blocked: Iterable[str]) -> list[dict[str, Any]]:
    """The tools the model may see: every tool whose name matches no blocked fnmatch pattern."""
    patterns = tuple(blocked)
    return [t for t in tools if not any(fnmatch.fnmatchcase(str(t.get("name", "")), p) for p in patterns)]


def estimate_tokens(messages: Iterable[Message]) -> int:
    """Estimated prompt tokens of `messages`."""
    return sum(len(m.content) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS for m in messages)


def trim_to_budget(system: Message, history: Sequence[Message], tail: Sequence[Message], budget: int) -> list[Message]:
    """Fit `system + history + tail` into `budget` tokens.

    The oldest history goes first; the system prompt and the tail (the question and this request's
    exchange) are kept, and when they alone are too big, their longest messages are clipped.
    """
    kept = list(history)
    fixed = estimate_tokens([system, *tail])
    while kept and fixed + estimate_tokens(kept) > budget:
        kept.pop(0)
    if fixed <= budget:
        return [system, *kept, *tail]
    return [system, *_clip_longest(list(tail), fixed - budget)]


def _clip_longest(tail: list[Message], excess_tokens: int) -> list[Message]:
    excess = excess_tokens * CHARS_PER_TOKEN
    for index in sorted(range(len(tail)), key=lambda i: -len(tail[i].content)):
        if excess <= 0:
            break
        content = tail[index].content
        keep = max(200, len(content) - excess - len(_TRIMMED))
        if keep < len(content):
            tail[index] = replace(tail[index], content=content[:keep] + _TRIMMED)
            excess -= len(content) - keep - len(_TRIMMED)
    return tail
