"""Events for the benches that drive the event store's own append path from their process, with no gateway."""

from datetime import UTC, datetime

from schemas.events import Event, EventData
from schemas.ids import new_id


def make_event(aggregate: str, data: EventData, *, actor: str = "client", trace_id: str = "trace") -> Event:
    """`data` in its envelope, as the gateway or a worker appends it: a fresh id, now, one actor and trace."""
    return Event(id=new_id(), aggregate=aggregate, ts=datetime.now(UTC), trace_id=trace_id, actor=actor, data=data)
