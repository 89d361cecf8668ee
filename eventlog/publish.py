"""Publishing a tool call: the `tool.requested` event and the enqueue op that travels with its append.

Both the gateway (async) and workers that call tools themselves (LLM loop, result handlers) publish through here.
"""

from datetime import UTC, datetime

from pydantic import JsonValue

from eventlog.append import Op
from eventlog.celery_message import task_message
from eventlog.redaction import redact_event
from eventlog.streams import celery_queue_key
from schemas import tasks
from schemas.codec import encode
from schemas.events import Event, EventData, ToolRequested
from schemas.ids import call_aggregate, new_id
from schemas.tools import ToolSpec


def request_event(
    spec: ToolSpec,
    args: dict[str, JsonValue],
    *,
    call_id: str,
    actor: str,
    trace_id: str | None = None,
    causation_id: str | None = None,
    timeout_s: float | None = None,
    result_handler: dict[str, JsonValue] | None = None,
    justified_by: list[str] | None = None,
) -> Event:
    """The `tool.requested` event for validated, normalised `args`."""
    queue = str(args[spec.queue_from]) if spec.queue_from and spec.queue_from in args else spec.queue
    data = ToolRequested(
        call_id=call_id,
        tool=spec.name,
        queue=queue,
        args=args,
        timeout_s=timeout_s or spec.timeout_s,
        result_handler=result_handler,
        justified_by=justified_by or [],
    )
    event = Event(
        id=new_id(),
        aggregate=call_aggregate(call_id),
        ts=datetime.now(UTC),
        trace_id=trace_id or new_id(),
        causation_id=causation_id,
        actor=actor,
        data=data,
    )
    return redact_event(event)  # issue 14: the queue message carries no secret either


def enqueue_op(event: Event) -> Op:
    """LPUSH of the Celery message that carries `event` (encoded) to its queue's `run_call` task."""
    data = event.data
    assert isinstance(data, ToolRequested)
    message = task_message(
        tasks.run_call_task(data.queue),
        data.queue,
        task_id=data.call_id,
        args=(encode(event),),
        argsrepr=f"(<tool.requested {data.tool} {data.call_id}>,)",
    )
    return Op("LPUSH", celery_queue_key(data.queue), (message,))


def new_event(
    aggregate: str, data: EventData, *, actor: str, trace_id: str | None = None, causation_id: str | None = None
) -> Event:
    """A fresh event envelope for `data` (time-ordered id, now, a new trace unless one is given)."""
    return Event(
        id=new_id(),
        aggregate=aggregate,
        ts=datetime.now(UTC),
        trace_id=trace_id or new_id(),
        causation_id=causation_id,
        actor=actor,
        data=data,  # type: ignore[arg-type]
    )


def follow(cause: Event, data: EventData) -> Event:
    """An event of the same aggregate, trace and actor as `cause`, caused by it."""
    return new_event(cause.aggregate, data, actor=cause.actor, trace_id=cause.trace_id, causation_id=cause.id)
