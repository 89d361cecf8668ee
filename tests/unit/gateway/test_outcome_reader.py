"""The gateway's shared outcome reader: a waiting call is handed the events it acts on, a trace follower every one."""

import asyncio
import contextlib

import fakeredis

from gateway.outcomes import OutcomeReader
from gateway.runtime import WAKE_TYPES
from geogate.calls.publish import new_event
from geogate.eventlog.append import stream_fields
from schemas.events import Event, EventData, ToolFailed, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate

CALLS = "t:log:calls"


def event(call_id: str, data: EventData, trace_id: str) -> Event:
    return new_event(call_aggregate(call_id), data, actor="test", trace_id=trace_id)


async def until(queue: asyncio.Queue[Event], last: str) -> list[str]:
    """The types handed to `queue` up to and including the first `last`: a sentinel appended after the events under
    test, so anything handed for them is already in the queue ahead of it (the reader keeps the log's order)."""
    got: list[str] = []
    while not got or got[-1] != last:
        got.append((await asyncio.wait_for(queue.get(), 5)).type)
    return got


async def scenario() -> tuple[list[str], list[str], list[str]]:
    client = fakeredis.FakeAsyncRedis()
    reader = OutcomeReader(client, CALLS, block_ms=50, wakes=WAKE_TYPES)
    await reader.start()
    try:
        waiting, other = reader.watch("c-1"), reader.watch("c-2")
        with reader.follow_trace("trace-1") as trace:
            for appended in (
                event("c-1", ToolStarted(call_id="c-1", worker="w:1", attempt="a1", queue_wait_ms=0.5), "trace-1"),
                event("c-1", ToolSucceeded(call_id="c-1", result={"pong": True}), "trace-1"),
                event("c-1", ToolFailed(call_id="c-1", code="test.sentinel", message="end"), "trace-1"),
                event("c-2", ToolFailed(call_id="c-2", code="test.sentinel", message="end"), "trace-2"),
            ):
                fields = stream_fields(appended, appended.id)
                await client.xadd(CALLS, dict(zip(fields[::2], fields[1::2], strict=True)))
            return (
                await until(waiting, "tool.failed"),
                await until(trace, "tool.failed"),
                await until(other, "tool.failed"),
            )
    finally:
        await reader.stop()


def test_a_waiting_call_is_handed_its_outcome_and_not_its_start_while_its_trace_follower_sees_both() -> None:
    waiting, trace, other = asyncio.run(scenario())
    assert waiting == ["tool.succeeded", "tool.failed"]
    assert trace == ["tool.started", "tool.succeeded", "tool.failed"]
    assert other == ["tool.failed"]


async def missing_its_first_cancel() -> None:
    """What the reader's task was seen to do inside redis-py's read: take a cancel and wait on."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.Event().wait()
    await asyncio.Event().wait()


def test_stop_ends_a_reader_task_that_missed_its_cancel() -> None:
    async def run() -> bool:
        reader = OutcomeReader(fakeredis.FakeAsyncRedis(), CALLS, block_ms=50)
        reader._task = asyncio.create_task(missing_its_first_cancel())
        await asyncio.sleep(0)  # the task is waiting
        await asyncio.wait_for(reader.stop(grace_s=0.05), 5)
        return reader._task.cancelled()

    assert asyncio.run(run())
