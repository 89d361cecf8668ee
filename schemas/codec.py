"""msgpack codec for events: the only place an event exists as a plain dict.

Rule: `model_dump(mode="json")` (datetimes become ISO strings), then `msgpack.packb`. Decoding applies
upcasters keyed by `(type, from_v)` before validation, so old events read as the current schema.
"""

from collections.abc import Callable
from typing import Any

import msgpack

from schemas.events import SCHEMA_VERSION, Event

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

UPCASTERS: dict[tuple[str, int], Upcaster] = {}
"""`(type, from_v)` → pure function returning the data dict at `from_v + 1`."""


def encode(event: Event) -> bytes:
    """Encode an event to msgpack bytes."""
    return msgpack.packb(event.model_dump(mode="json"), use_bin_type=True)


def decode(payload: bytes) -> Event:
    """Decode msgpack bytes to an event, upcasting older schema versions first.

    Raises:
        pydantic.ValidationError: the payload is not a valid event.
        ValueError: the payload is not msgpack.
    """
    raw = msgpack.unpackb(payload, raw=False)
    if raw.get("v") != SCHEMA_VERSION:  # current events (nearly all) validate as read, without a copy
        raw = _upcast(raw)
    return Event.model_validate(raw)


def _upcast(raw: dict[str, Any]) -> dict[str, Any]:
    version = int(raw.get("v", SCHEMA_VERSION))
    kind = raw.get("data", {}).get("type", "")
    while version < SCHEMA_VERSION:
        step = UPCASTERS.get((kind, version))
        if step is not None:
            raw = {**raw, "data": step(raw["data"])}
        version += 1
    return {**raw, "v": max(version, int(raw.get("v", SCHEMA_VERSION)))}
