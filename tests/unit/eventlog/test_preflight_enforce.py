"""Calls made by workers (LLM host, handler chaining) pass the same preflight gate as clients' calls."""

import pytest

from eventlog.calls import CallTimedOut, call_and_wait
from eventlog.preflight import PreflightMissing, needed_for
from eventlog.store import EventStore
from schemas.events.justification import JustificationPersisted, justification_aggregate
from schemas.tools import TOOLS
from tests.support import make_event

GOOD = {
    "intent": "i",
    "alternatives": [{"method": "m", "why_not": "w"}],
    "choice": {"method": "c", "rationale": "r", "tradeoffs": "t"},
    "confidence": "low",
}
ARGS = {"uri": "points.gpkg", "output": "out.gpkg", "dst_crs": "EPSG:3035"}


def test_a_gated_call_without_a_justification_is_refused_and_publishes_nothing(fake_store: EventStore) -> None:
    with pytest.raises(PreflightMissing) as info:
        call_and_wait(fake_store, TOOLS["vector_reproject"], ARGS, actor="llm", timeout_s=0.01)

    assert info.value.code == "preflight.required" and info.value.required[0]["domain"] == "crs_datum"
    assert fake_store.read("calls") == []
    assert [e.event.type for e in fake_store.read("justifications")] == ["preflight.required"]


def test_a_justified_call_is_published_with_the_hashes_that_let_it_through(fake_store: EventStore) -> None:
    needed = needed_for(TOOLS["vector_reproject"], {"dst_crs": "EPSG:3035"})[0]
    data = JustificationPersisted(
        hash=needed.hash, domain="crs_datum", prompt=needed.prompt, prompt_args=needed.prompt_args, justification=GOOD
    )
    fake_store.append(make_event(justification_aggregate(needed.hash), data), "persisted")

    with pytest.raises(CallTimedOut):  # no worker in a unit test: the call is published, then waited on
        call_and_wait(fake_store, TOOLS["vector_reproject"], ARGS, actor="llm", timeout_s=0.01)

    requested = fake_store.read("calls")[0].event.data
    assert requested.type == "tool.requested" and requested.justified_by == [needed.hash]
