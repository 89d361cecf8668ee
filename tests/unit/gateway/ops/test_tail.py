"""`geogate events tail`: filtering, JSON lines, and following every stream without gaps."""

import json
from itertools import islice

from gateway.ops.tail import as_json, follow, last_events, select
from geogate.calls import keys
from geogate.calls.store import EventStore
from schemas.events import ToolRequested, WorkflowExpired
from schemas.events.workflow import workflow_aggregate
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


def request(store: EventStore) -> str:
    call_id = new_id()
    data = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=1)
    store.append(make_event(call_aggregate(call_id), data), keys.requested_key(call_id))
    return call_id


def test_last_events_merge_streams_by_entry_id_and_filter_by_type(fake_store: EventStore) -> None:
    first = request(fake_store)
    fake_store.append(
        make_event(workflow_aggregate("wf_1"), WorkflowExpired(state_id="wf_1", version=2, idle_s=9)), "e"
    )
    second = request(fake_store)

    events = last_events(fake_store, 10)

    # one order across streams, by entry id; within the same millisecond streams may interleave either way
    assert sorted(e.event.type for e in events) == ["tool.requested", "tool.requested", "workflow.expired"]
    assert [tuple(map(int, e.entry_id.split("-"))) for e in events] == sorted(
        tuple(map(int, e.entry_id.split("-"))) for e in events
    )
    assert [e.event.data.call_id for e in select(iter(events), "tool.*")] == [first, second]
    assert json.loads(as_json(events[0]))["aggregate"] == f"call:{first}"


def test_follow_sees_events_that_arrive_on_other_streams_meanwhile(fake_store: EventStore) -> None:
    request(fake_store)  # history: not printed by follow
    tail = follow(fake_store, block_ms=10)
    request(fake_store)
    fake_store.append(
        make_event(workflow_aggregate("wf_2"), WorkflowExpired(state_id="wf_2", version=3, idle_s=1)), "x"
    )
    request(fake_store)

    seen = [e.event.type for e in islice(tail, 3)]

    assert sorted(seen) == ["tool.requested", "tool.requested", "workflow.expired"]


def test_an_outcome_line_carries_the_calls_stage_durations() -> None:
    from gateway.ops.tail import Stages
    from schemas.events import HandlerSucceeded, OutputRef, ToolStarted, ToolSucceeded
    from tests.unit.geogate.calls.ops_samples import at

    call_id, stages = new_id(), Stages()
    agg = call_aggregate(call_id)
    handler = {"language": "jmespath", "script": "a"}

    def ev(data, ms):
        return make_event(agg, data).model_copy(update={"ts": at(ms)})

    requested = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=1, result_handler=handler)
    assert stages.note(ev(requested, 0)) == ""
    assert stages.note(ev(ToolStarted(call_id=call_id, worker="w", attempt="a", queue_wait_ms=2.0), 2)) == ""
    assert stages.note(ev(ToolSucceeded(call_id=call_id, duration_ms=10.0), 12)) == "queue 2.0 ms · run 10.0 ms"
    raw = OutputRef(uri="blob://sha256:00", size=1, sha256="00")
    done = HandlerSucceeded(call_id=call_id, value_bytes=1, raw=raw, language="jmespath", isolation="x", duration_ms=1)
    assert stages.note(ev(done, 15)) == "handler 3.0 ms · answer 15.0 ms"
