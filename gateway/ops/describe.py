"""One line per event for people: what happened, by whom, in which attempt. Any event type, known or new.

Shared by `/ops` (tail, timelines) and `geogate events tail`, so both say the same thing.
"""

import json
from typing import Any

from pydantic import BaseModel

from schemas.events import Event

MAX_CHARS = 160
SKIPPED = frozenset({"type", "call_id", "worker", "attempt", "conversation_id", "state_id"})
"""Fields shown in columns of their own (or implied by the aggregate), never repeated in the description."""


def worker_of(event: Event) -> str:
    return str(getattr(event.data, "worker", "") or "")


def attempt_of(event: Event) -> str:
    return str(getattr(event.data, "attempt", "") or "")


def describe(event: Event) -> str:
    """A short, readable account of `event`'s payload."""
    data = event.data
    own = getattr(data, "describe", None)
    if callable(own):
        return _clip(str(own()))
    special = _SPECIAL.get(event.type)
    return _clip(special(data) if special else _fields(data))


def _fields(data: BaseModel) -> str:
    dumped = data.model_dump(mode="json", exclude=set(SKIPPED))
    parts = [f"{k}={_short(v)}" for k, v in dumped.items() if v not in (None, "", [], {}, 0, 0.0, False)]
    return " ".join(parts)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _ms(value: float) -> str:
    if value < 1:
        return f"{value:.2f} ms"
    return f"{value:,.1f} ms" if value < 10_000 else f"{value / 1000:,.1f} s"


def _requested(data: Any) -> str:
    handler = f", handler {data.result_handler.get('language')}" if data.result_handler else ""
    return f"{data.tool} on {data.queue} {_short(data.args)}{handler}"


def _started(data: Any) -> str:
    return f"taken after {_ms(data.queue_wait_ms)} in the queue"


def _handler_started(data: Any) -> str:
    return f"{data.language} handler taken after {_ms(data.queue_wait_ms)} in the queue"


def _progress(data: Any) -> str:
    done = f"{data.progress / data.total:.0%}" if data.total else f"{data.progress:g}"
    return f"{done} {data.message or ''}".strip()


def _succeeded(data: Any) -> str:
    where = f" → {data.output_ref.uri} ({data.output_ref.size:,} B)" if data.output_ref else ""
    return f"ran {_ms(data.duration_ms)}{where}: {data.text or _short(data.result)}"


def _failed(data: Any) -> str:
    field = f" [{data.field}]" if data.field else ""
    retry = " (retryable)" if data.retryable else ""
    return f"{data.code}{field}: {data.message}{retry} after {_ms(data.duration_ms)}"


def _handler_succeeded(data: Any) -> str:
    return f"{data.language} handler ran {_ms(data.duration_ms)} in {data.isolation}: {data.value_bytes:,} B value"


def _handler_failed(data: Any) -> str:
    line = f" line {data.line}" if data.line else ""
    return f"{data.language} handler {data.code}{line}: {data.message}"


_SPECIAL = {
    "tool.requested": _requested,
    "tool.started": _started,
    "tool.progress": _progress,
    "tool.succeeded": _succeeded,
    "tool.failed": _failed,
    "handler.started": _handler_started,
    "handler.succeeded": _handler_succeeded,
    "handler.failed": _handler_failed,
}
