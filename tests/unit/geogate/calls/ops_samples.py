"""Calls appended with chosen timestamps, for the ops-summary tests (fold, feed, reader, status)."""

from datetime import UTC, datetime, timedelta

from geogate.calls.store import EventStore
from schemas.events import (
    Event,
    EventData,
    HandlerFailed,
    HandlerStarted,
    OutputRef,
    ToolFailed,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.ids import call_aggregate, new_id

T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
RAW = OutputRef(uri="blob://sha256:" + "0" * 64, size=2, sha256="0" * 64)


def at(ms: float) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def put(store: EventStore, call_id: str, data: EventData, ms: float, key: str, trace: str = "") -> Event:
    event = Event(
        id=new_id(),
        aggregate=call_aggregate(call_id),
        ts=at(ms),
        trace_id=trace or call_id,
        actor="ops-test",
        data=data,
    )
    store.append(event, f"call:{call_id}:{key}")
    return event


def call(
    store: EventStore,
    tool: str,
    *,
    start_ms: float = 0.0,
    queue_ms: float = 2.0,
    run_ms: float = 10.0,
    fail: str | None = None,
    worker: str = "host:1",
    handler: str | None = None,
) -> str:
    """One whole call: requested → started → succeeded | failed (→ handler.started → handler.* when `handler`)."""
    cid = new_id()
    handled = {"language": "jmespath", "script": "a"} if handler else None
    put(
        store,
        cid,
        ToolRequested(call_id=cid, tool=tool, queue="gdal", args={}, timeout_s=60, result_handler=handled),
        start_ms,
        "req",
    )
    put(
        store,
        cid,
        ToolStarted(call_id=cid, worker=worker, attempt="a1", queue_wait_ms=queue_ms),
        start_ms + queue_ms,
        "start",
    )
    end = start_ms + queue_ms + run_ms
    if fail:
        put(
            store,
            cid,
            ToolFailed(call_id=cid, code=fail, message="boom", duration_ms=run_ms, worker=worker),
            end,
            "out",
        )
        return cid
    put(store, cid, ToolSucceeded(call_id=cid, result={"ok": True}, duration_ms=run_ms, worker=worker), end, "out")
    if handler:
        put(store, cid, HandlerStarted(call_id=cid, language="jmespath", worker="sb:1", attempt="h1"), end + 1, "hs")
        failed = HandlerFailed(call_id=cid, code=handler, message="x", raw=RAW, language="jmespath", worker="sb:1")
        put(store, cid, failed, end + 5, "ho")
    return cid
