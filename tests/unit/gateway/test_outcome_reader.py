"""The gateway's shared outcome reader: a waiting call is handed the events it acts on, a trace follower every one."""

import asyncio

import fakeredis

from eventlog.append import stream_fields
from eventlog.publish import new_event
from gateway.outcomes import OutcomeReader
from gateway.runtime import WAKES
from schemas.events import Event, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate

CALLS = "t:log:calls"


def events(call_id: str, trace_id: str) -> list[Event]:
    started = ToolStarted(call_id=call_id, worker="w:1", attempt="a1", queue_wait_ms=0.5)
    succeeded = ToolSucceeded(call_id=call_id, result={"pong": True})
    aggregate = call_aggregate(call_id)
    return [new_event(aggregate, data, actor="test", trace_id=trace_id) for data in (started, succeeded)]


async def drained(queue: asyncio.Queue[Event], expected: int) -> list[str]:
    got = [await asyncio.wait_for(queue.get(), 5) for _ in range(expected)]
    await asyncio.sleep(0.05)  # give the reader the chance to hand over anything more
    return [event.type for event in got] + ["unexpected"] * queue.qsize()


async def scenario() -> tuple[list[str], list[str], list[str]]:
    client = fakeredis.FakeAsyncRedis()
    reader = OutcomeReader(client, CALLS, block_ms=50, wakes=frozenset(k.model_fields["type"].default for k in WAKES))
    await reader.start()
    try:
        waiting, other = reader.watch("c-1"), reader.watch("c-2")
        with reader.follow_trace("trace-1") as trace:
            for event in events("c-1", "trace-1"):
                await client.xadd(CALLS, dict(zip(*[iter(stream_fields(event, event.id))] * 2, strict=True)))
            return await drained(waiting, 1), await drained(trace, 2), await drained(other, 0)
    finally:
        await reader.stop()


def test_a_waiting_call_is_handed_its_outcome_and_not_its_start_while_its_trace_follower_sees_both() -> None:
    waiting, trace, other = asyncio.run(scenario())
    assert waiting == ["tool.succeeded"]
    assert trace == ["tool.started", "tool.succeeded"]
    assert other == []
