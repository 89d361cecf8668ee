"""The X-ray rebuilt from the log: a pure fold over a conversation's `llm.*` events and its calls' `tool.*` events.

Links: `llm.conversation_started` opens a run; each `tool.requested` the loop made has an `llm.attempt` of that run
as its `causation_id`; a call's other events share its `call:<id>` aggregate. A redelivered job starts a new run in
the same aggregate, and the X-ray shows the latest run.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import JsonValue

from geogate.calls.store import EventStore
from schemas.chat import Citation, TimelineEntry, XRay, XRayTool
from schemas.events import Event, ToolFailed, ToolRequested, ToolStarted, ToolSucceeded
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted, conversation_aggregate
from schemas.ids import call_aggregate
from workers.llm.xray import MAX_CITATIONS, citations_from, preview

Outcome = ToolSucceeded | ToolFailed


def xray_from_events(events: Iterable[Event], *, preview_chars: int = 200) -> XRay:
    """The X-ray of the latest run among `events` (the conversation's and its calls', in any order).

    Tools come in request order with params as validated and run, duration from request to outcome, and a
    preview of the response; citations come from successful tool RESULTS only; times are milliseconds after
    `llm.conversation_started`.
    """
    ordered = sorted(events, key=lambda e: e.ts)
    run = _latest_run([e for e in ordered if e.type.startswith("llm.")])
    if not run:
        return XRay()
    origin, causes = run[0].ts, {e.id for e in run}
    requests = [e for e in ordered if isinstance(e.data, ToolRequested) and e.causation_id in causes]
    mine = {e.aggregate for e in requests}
    calls = [e for e in ordered if e.aggregate in mine]
    outcomes = _outcomes(calls)
    tools = [_tool(r, outcomes.get(r.aggregate), preview_chars) for r in requests]
    timeline = [_entry(e, origin, _names(requests)) for e in sorted([*run, *calls], key=lambda e: e.ts)]
    return XRay(
        tools=tools,
        timeline=[t for t in timeline if t is not None],
        total_ms=_total_ms(run),
        citations=_citations(requests, outcomes),
    )


def load_conversation(store: EventStore, conversation_id: str, call_ids: Iterable[str]) -> list[Event]:
    """The conversation's events and those of the calls it made (`call_ids`), read from the log."""
    events = store.read_aggregate(conversation_aggregate(conversation_id))
    for call_id in dict.fromkeys(call_ids):
        events += store.read_aggregate(call_aggregate(call_id))
    return events


def _latest_run(llm_events: Sequence[Event]) -> list[Event]:
    starts = [i for i, e in enumerate(llm_events) if isinstance(e.data, LLMConversationStarted)]
    return list(llm_events[starts[-1] :]) if starts else []


def _outcomes(calls: Iterable[Event]) -> dict[str, Event]:
    found: dict[str, Event] = {}
    for event in calls:
        if isinstance(event.data, ToolSucceeded | ToolFailed):
            found.setdefault(event.aggregate, event)  # one outcome per call; the first is the one that counts
    return found


def _tool(requested: Event, outcome: Event | None, preview_chars: int) -> XRayTool:
    data = requested.payload(ToolRequested)
    done = outcome.data if outcome is not None else None
    return XRayTool(
        name=data.tool,
        params=data.args,
        duration_ms=_ms(requested.ts, outcome.ts) if outcome is not None else 0.0,
        response_preview=_response(done, preview_chars),
        is_error=not isinstance(done, ToolSucceeded),
    )


def _response(done: object, preview_chars: int) -> str:
    if isinstance(done, ToolSucceeded):
        return preview(done.result, done.text, preview_chars)
    if isinstance(done, ToolFailed):
        return preview(None, f"{done.code}: {done.message}", preview_chars)
    return "(no outcome in the log)"


def _citations(requests: Sequence[Event], outcomes: dict[str, Event]) -> list[Citation]:
    cited: dict[str, Citation] = {}
    for requested in requests:
        outcome = outcomes.get(requested.aggregate)
        if outcome is not None and isinstance(outcome.data, ToolSucceeded):
            tool = requested.payload(ToolRequested).tool
            for citation in citations_from(tool, _result(outcome.data)):
                cited.setdefault(citation.source, citation)
    return list(cited.values())[:MAX_CITATIONS]


def _result(data: ToolSucceeded) -> JsonValue:
    """The inline result; a result kept in the blob store is cited by its reference."""
    return data.result if data.output_ref is None else {"source": data.output_ref.uri}


def _names(requests: Sequence[Event]) -> dict[str, str]:
    return {r.aggregate: r.payload(ToolRequested).tool for r in requests}


def _entry(event: Event, origin: datetime, names: dict[str, str]) -> TimelineEntry | None:
    text = _describe(event, names.get(event.aggregate, "?"))
    return None if text is None else TimelineEntry(t_ms=_ms(origin, event.ts), event=text)


def _describe(event: Event, tool: str) -> str | None:
    data = event.data
    if isinstance(data, LLMConversationStarted):
        return f"conversation started: {data.describe()}"
    if isinstance(data, LLMAttempted):
        return data.describe()
    if isinstance(data, LLMConversationFinished):
        return f"conversation {data.outcome}"
    return _describe_call(data, tool)


def _describe_call(data: object, tool: str) -> str | None:
    if isinstance(data, ToolRequested):
        return f"tool {tool} requested"
    if isinstance(data, ToolStarted):
        return f"tool {tool} started on {data.worker}"
    if isinstance(data, ToolSucceeded):
        return f"tool {tool} finished"
    if isinstance(data, ToolFailed):
        return f"tool {tool} failed ({data.code})"
    return None  # progress and cancellation requests stay out of the timeline


def _total_ms(run: Sequence[Event]) -> float:
    finished = [e for e in run if isinstance(e.data, LLMConversationFinished)]
    return _ms(run[0].ts, (finished[-1] if finished else run[-1]).ts)


def _ms(start: datetime, end: datetime) -> float:
    return round(max(0.0, (end - start).total_seconds() * 1000), 3)
