"""The msgpack codec: every event type survives a round trip, and the union lists every event class."""

from datetime import UTC, datetime
from typing import Annotated, get_args, get_origin

from hypothesis import given
from hypothesis import strategies as st
from pydantic.fields import FieldInfo

import schemas.events as events_module
from schemas.codec import UPCASTERS, decode, encode
from schemas.events import AnyEventData, Event, EventData, event_data_adapter

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


def _union_members() -> set[type]:
    return set(get_args(get_args(AnyEventData)[0]))


def test_every_event_data_class_is_in_the_union() -> None:
    """Guards the contract the way httpx guards __all__: a new event type cannot be forgotten."""
    assert {c for c in _all_subclasses(EventData) if "type" in c.model_fields} == _union_members()


def test_every_event_type_string_is_spelled_once() -> None:
    types = [c.model_fields["type"].default for c in _union_members()]
    assert len(types) == len(set(types))


def _annotated(field: FieldInfo) -> object:
    """The field's type with its constraints (ge/le…), so generated values respect them."""
    return Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation


def _strategy(annotation: object) -> st.SearchStrategy[object]:
    base, metadata = (
        (get_args(annotation)[0], get_args(annotation)[1:]) if get_origin(annotation) is Annotated else (annotation, ())
    )
    if base is int and not metadata:
        return st.integers(-(2**63), 2**64 - 1)  # what msgpack can carry
    if get_origin(base) is dict:
        least = max((getattr(m, "min_length", 0) or 0 for m in metadata), default=0)
        values = _strategy(get_args(base)[1]) if get_args(base) else json_values
        return st.dictionaries(st.text(max_size=8), values, min_size=least, max_size=max(4, least))
    if "JsonValue" in str(annotation):
        return json_values
    if base is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    return st.from_type(annotation)  # type: ignore[arg-type]


event_data = st.sampled_from(sorted(_union_members(), key=lambda c: c.__name__)).flatmap(
    lambda cls: st.builds(cls, **{n: _strategy(_annotated(f)) for n, f in cls.model_fields.items() if f.is_required()})
)


@given(
    data=event_data,
    actor=st.text(max_size=30),
    ts=st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
)
def test_every_event_survives_a_msgpack_round_trip(data: EventData, actor: str, ts: datetime) -> None:
    event = Event(id="01J0000000000000000000000", aggregate="call:x", ts=ts, trace_id="t", actor=actor, data=data)

    assert decode(encode(event)) == event


def test_an_old_version_is_upcast_before_validation(monkeypatch) -> None:
    event = Event(
        id="01J0000000000000000000000",
        aggregate="call:x",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        trace_id="t",
        data=event_data_adapter.validate_python({"type": "tool.cancel_requested", "call_id": "x"}),
    )
    raw = encode(event.model_copy(update={"v": 0}))
    monkeypatch.setitem(UPCASTERS, ("tool.cancel_requested", 0), lambda d: {**d, "reason": "upcast"})
    monkeypatch.setattr(events_module, "SCHEMA_VERSION", 1)

    assert decode(raw).data.reason == "upcast"
