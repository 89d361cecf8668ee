"""Where each reader of the log has got to, so that trimming never removes what a live reader has not absorbed.

The hash `geogate:checkpoints` holds `<consumer>|<stream> → last absorbed entry id` and `<consumer>|@ → when the
consumer last wrote` (epoch ms). A consumer that has not written for `GEOGATE_RETENTION_CONSUMER_STALE_S` is
taken for gone and no longer holds trimming back.
"""

import time
from typing import Any

SEEN = "@"


def marks(consumer: str, positions: dict[str, str], now_ms: int | None = None) -> list[str]:
    """HSET arguments recording `positions` (stream → entry id) and the consumer's liveness."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    out = [x for stream, entry in positions.items() for x in (f"{consumer}|{stream}", entry)]
    return [*out, f"{consumer}|{SEEN}", str(now_ms)]


def live_positions(raw: dict[Any, Any], stream: str, now_ms: int, stale_s: float) -> list[str]:
    """The checkpoints on `stream` of consumers seen within `stale_s` (a consumer that never said when counts)."""
    fields = {_text(k): _text(v) for k, v in raw.items()}
    positions = []
    for field, value in fields.items():
        consumer, _, name = field.rpartition("|")
        if name != stream:
            continue
        seen = fields.get(f"{consumer}|{SEEN}")
        if seen is None or now_ms - int(seen) <= stale_s * 1000:
            positions.append(value)
    return positions


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
