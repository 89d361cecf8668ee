"""Reasoning is not a call: split a reply's leading reasoning block from its content, as serving engines do.

Recognised blocks (each may open the reply; the opener may also be in the prompt, leaving only its closer):
`<think>…</think>` (Qwen3, DeepSeek R1/V3.1+, GLM, Kimi, MiniMax), `[THINK]…[/THINK]` (Magistral),
`<|channel>thought…<channel|>` (Gemma 4) and `<|open|>think<|sep|>…<|close|>think<|sep|>` (Kimi K3).
gpt-oss's analysis channel is read by the harmony parser.
"""

from dataclasses import dataclass, field

from schemas.chat import ExtractionError
from workers.llm.scanner import scan_objects

PAIRS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),
    ("<|channel>thought", "<channel|>"),
    ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
)


@dataclass
class Split:
    """The reasoning text, the content after it, and an error when the reply ended inside its reasoning."""

    reasoning: str = ""
    content: str = ""
    errors: list[ExtractionError] = field(default_factory=list)


def split_reasoning(text: str) -> Split:
    """Leading reasoning blocks (any number, any of `PAIRS`) apart from the content that follows them."""
    split = Split(content=text)
    parts: list[str] = []
    while (found := _leading(split.content)) is not None:
        inner, rest, closed = found
        parts.append(inner.strip())
        split.content = rest
        if not closed:
            split.errors.append(
                ExtractionError(kind="truncated", message="the reply ends inside its reasoning, before any answer")
            )
            break
    split.reasoning = "\n\n".join(p for p in parts if p)
    return split


def _leading(text: str) -> tuple[str, str, bool] | None:
    """(reasoning, rest, closed) of the block `text` opens with, or of an orphan closer; None if neither."""
    head = text.lstrip()
    for opener, closer in PAIRS:
        if head.startswith(opener):
            body = head[len(opener) :]
            end = body.find(closer)
            if end == -1:
                return body, "", False
            return body[:end], body[end + len(closer) :], True
    return _orphan(text)


def _orphan(text: str) -> tuple[str, str, bool] | None:
    """A closer whose opener was in the prompt: what precedes it is reasoning, unless it sits in a JSON string."""
    for opener, closer in PAIRS:
        at = text.find(closer)
        if at == -1 or opener in text[:at] or _inside_json(text, at):
            continue
        return text[:at], text[at + len(closer) :], True
    return None


def _inside_json(text: str, pos: int) -> bool:
    if "{" not in text[:pos]:
        return False
    return any(span.closed and span.start < pos < span.end for span in scan_objects(text))
