"""Calls made by workers (LLM host, handler chaining) are planned and gated as clients' calls are (issues 14, 15)."""

import pytest

from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.events import ToolFailed
from schemas.events.justification import JustificationPersisted, justification_aggregate
from schemas.preflight.gate import PreflightMissing
from schemas.preflight.keys import needed_for
from schemas.tools import TOOLS
from tests.support import make_event
from workers.run.calling import CallTimedOut, call_tool

TTL = Settings.defaults().justification_ttl

GOOD = {
    "intent": "i",
    "alternatives": [{"method": "m", "why_not": "w"}],
    "choice": {"method": "c", "rationale": "r", "tradeoffs": "t"},
    "confidence": "low",
}
ARGS = {"uri": "points.gpkg", "output": "out.gpkg", "dst_crs": "EPSG:3035"}


def test_a_gated_call_without_a_justification_is_refused_and_publishes_nothing(fake_store: EventStore) -> None:
    with pytest.raises(PreflightMissing) as info:
        call_tool(fake_store, TOOLS["vector_reproject"], ARGS, actor="llm", timeout_s=0.01, ttl_for=TTL)

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
        call_tool(fake_store, TOOLS["vector_reproject"], ARGS, actor="llm", timeout_s=0.01, ttl_for=TTL)

    requested = fake_store.read("calls")[0].event.data
    assert requested.type == "tool.requested" and requested.justified_by == [needed.hash]


def test_a_client_without_write_cannot_have_a_worker_write_for_it(fake_store: EventStore) -> None:
    fake_store.redis.set(fake_store.keys.client_scopes("reader"), "llm,read")
    args = {"uri": "dem.tif", "output": "out.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"}

    outcome = call_tool(fake_store, TOOLS["raster_reproject"], args, actor="reader", timeout_s=1, ttl_for=TTL)

    assert isinstance(outcome.data, ToolFailed) and outcome.data.code == "auth.insufficient_scope"
    assert "'write'" in outcome.data.message
    assert fake_store.read("calls") == []  # nothing was published
