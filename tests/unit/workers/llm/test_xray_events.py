"""The X-ray rebuilt from events: linked by causation, latest run only, citations from results, the `ask` limits."""

from datetime import UTC, datetime, timedelta
from typing import Any

from geogate.calls.store import EventStore
from geogate.settings import LLMSettings
from schemas.events import (
    Event,
    EventData,
    OutputRef,
    ToolFailed,
    ToolProgress,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted
from schemas.ids import new_id
from schemas.tools.llm import AskArgs
from tests.support import make_event
from workers.jobkit.context import JobContext
from workers.llm.config import config_for, policy_for
from workers.llm.job import ConversationLog, tool_definitions
from workers.llm.xray_events import xray_from_events

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Log:
    """Builds a conversation's events with causation links, `ms` after T0."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, aggregate: str, data: EventData, ms: float, cause: Event | None = None) -> Event:
        event = Event(
            id=new_id(),
            aggregate=aggregate,
            ts=T0 + timedelta(milliseconds=ms),
            trace_id="t",
            causation_id=cause.id if cause else None,
            data=data,  # type: ignore[arg-type]
        )
        self.events.append(event)
        return event

    def started(self, ms: float) -> Event:
        data = LLMConversationStarted(conversation_id="c", model="m", provider="openai", mode="prompt", tools=["x"])
        return self.add("conversation:c", data, ms)

    def attempt(self, ms: float, cause: Event, outcome: str = "calls") -> Event:
        data = LLMAttempted(
            conversation_id="c", turn=1, attempt=1, model="m", provider="openai", temperature=0.7, outcome=outcome
        )
        return self.add("conversation:c", data, ms, cause)

    def call(self, ms: float, cause: Event | None, tool: str, outcome: Any, took: float = 10.0) -> str:
        call_id = new_id()
        requested = ToolRequested(call_id=call_id, tool=tool, queue="gdal", args={"uri": "a.tif"}, timeout_s=60)
        first = self.add(f"call:{call_id}", requested, ms, cause)
        self.add(f"call:{call_id}", ToolProgress(call_id=call_id, progress=1), ms + 1, first)
        if outcome is not None:
            self.add(f"call:{call_id}", outcome.model_copy(update={"call_id": call_id}), ms + took, first)
        return call_id


def ok(result: Any, text: str = "") -> ToolSucceeded:
    return ToolSucceeded(call_id="-", result=result, text=text)


def test_tools_durations_citations_and_total_come_from_the_linked_events_only() -> None:
    log = Log()
    start = log.started(0)
    attempt = log.attempt(5, start)
    log.call(6, attempt, "raster_info", ok({"path": "/w/a.tif", "uri": "a.tif"}, "GTiff"), took=20)
    log.call(7, attempt, "vector_info", ToolFailed(call_id="-", code="path.missing", message="no such file"))
    log.call(8, None, "raster_info", ok({"path": "/w/other.tif"}))  # someone else's call: not linked
    finished = LLMConversationFinished(conversation_id="c", outcome="answered", attempts=1, tool_calls=2, total_ms=1)
    log.add("conversation:c", finished, 40, attempt)

    xray = xray_from_events(reversed(log.events))

    assert [(t.name, t.duration_ms, t.is_error) for t in xray.tools] == [
        ("raster_info", 20.0, False),
        ("vector_info", 10.0, True),
    ]
    assert [t.response_preview for t in xray.tools] == ["GTiff", "path.missing: no such file"]
    assert [c.source for c in xray.citations] == ["/w/a.tif", "a.tif"]
    assert xray.total_ms == 40.0 and xray.timeline[0].t_ms == 0.0
    assert [e.event for e in xray.timeline].count("tool raster_info requested") == 1
    assert not any("progress" in e.event for e in xray.timeline)


def test_a_redelivered_job_shows_only_its_latest_run() -> None:
    log = Log()
    first = log.attempt(1, log.started(0))
    log.call(2, first, "raster_info", ok({"source": "old"}))
    second = log.attempt(101, log.started(100))
    log.call(102, second, "vector_info", None)

    xray = xray_from_events(log.events)

    assert [(t.name, t.is_error, t.response_preview) for t in xray.tools] == [
        ("vector_info", True, "(no outcome in the log)")
    ]
    assert xray.citations == [] and xray.timeline[0].t_ms == 0.0


def test_a_result_kept_in_the_blob_store_is_cited_by_reference_and_no_events_give_an_empty_xray() -> None:
    log = Log()
    attempt = log.attempt(1, log.started(0))
    ref = OutputRef(uri="blob://sha256:ab", size=9, sha256="ab")
    log.call(2, attempt, "raster_stats", ToolSucceeded(call_id="-", result=None, text="big", output_ref=ref))

    assert [c.source for c in xray_from_events(log.events).citations] == ["blob://sha256:ab"]
    assert xray_from_events([]).tools == []


def test_tool_definitions_come_from_the_registry_without_ask_and_carry_aliases() -> None:
    tools = {t["name"]: t for t in tool_definitions()}

    assert "ask" not in tools and "raster_info" in tools
    assert tools["raster_info"]["inputSchema"]["required"] == ["uri"]
    assert tools["raster_info"]["_meta"]["aliases"]["path"] == "uri"


def test_a_request_may_lower_the_servers_limits_but_never_raise_them() -> None:
    settings = LLMSettings(max_tool_calls=4, max_attempts=3, blocked_tools=" *_delete, raster_convert ,")
    policy = policy_for(settings, AskArgs(question="q", max_tool_calls=10, max_attempts=2))

    assert (policy.max_tool_calls, policy.max_attempts, policy.max_turns) == (4, 2, settings.max_turns)
    assert policy.blocked_tools == ("ask", "*_delete", "raster_convert")
    assert config_for(settings, "gpt-4o-mini").model == "gpt-4o-mini" and config_for(settings).model == settings.model


def test_each_run_of_a_redelivered_ask_job_is_recorded_once_and_apart(fake_store: EventStore) -> None:
    ctx = JobContext(call_id="c1", roots=[], actor="tester", trace_id="t")
    started = LLMConversationStarted(conversation_id="c1", model="m", provider="openai", mode="prompt")
    for attempt in ("run-1", "run-1", "run-2"):  # the second run-1 append is a retried append: a duplicate
        tool_started = ToolStarted(call_id="c1", worker="w", attempt=attempt, queue_wait_ms=0)
        fake_store.append(make_event("call:c1", tool_started), f"call:c1:started:{attempt}")
        log = ConversationLog.open(fake_store, ctx)
        log.lifecycle(started)
        assert log.run == attempt and log.cause is not None

    events = fake_store.read_aggregate("conversation:c1")
    assert [e.type for e in events] == ["llm.conversation_started", "llm.conversation_started"]
    assert {e.trace_id for e in events} == {"t"} and len({e.causation_id for e in events}) == 2
