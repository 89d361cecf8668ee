"""Questions a fixture job asks its client (MRTR input requests) and how to read the answers."""

from typing import Any

Question = dict[str, Any]


def form(message: str, properties: dict[str, dict[str, Any]], required: list[str] | None = None) -> Question:
    """An `elicitation/create` form; `required` defaults to every field."""
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def one_field(message: str, field: str, kind: str = "string") -> Question:
    """A form with a single required field."""
    return form(message, {field: {"type": kind}})


def sample(text: str, max_tokens: int = 100) -> Question:
    """A `sampling/createMessage` request: one user message for the client's model."""
    message = {"role": "user", "content": {"type": "text", "text": text}}
    return {"method": "sampling/createMessage", "params": {"messages": [message], "maxTokens": max_tokens}}


def roots() -> Question:
    return {"method": "roots/list", "params": {}}


def accepted(answer: Any) -> dict[str, Any]:
    """The content of an accepted form, else {} (declined, cancelled, or not a form answer)."""
    if isinstance(answer, dict) and answer.get("action") == "accept" and isinstance(answer.get("content"), dict):
        return answer["content"]
    return {}


def action(answer: Any) -> str:
    return str(answer.get("action", "?")) if isinstance(answer, dict) else "?"


def sampled_text(answer: Any) -> str:
    """The text of a sampling answer (its text blocks joined), or "" when it has none."""
    content = answer.get("content") if isinstance(answer, dict) else None
    blocks = content if isinstance(content, list) else [content]
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def root_count(answer: Any) -> int:
    found = answer.get("roots") if isinstance(answer, dict) else None
    return len(found) if isinstance(found, list) else 0
