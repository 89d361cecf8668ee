"""Identifiers: time-ordered ids (ULID) and aggregate names such as `call:<id>`."""

from ulid import ULID

CallId = str
EventId = str


def new_id() -> str:
    """A new time-ordered, globally unique id (26-character ULID)."""
    return str(ULID())


def call_aggregate(call_id: CallId) -> str:
    """The aggregate of one tool call."""
    return f"call:{call_id}"


def aggregate_id(aggregate: str) -> str:
    """The id part of an aggregate name (`call:01J…` → `01J…`)."""
    return aggregate.split(":", 1)[1]
