"""Publishing a tool call: the `tool.requested` event and the enqueue op that travels with its append.

Both the gateway (async) and workers that call tools themselves (LLM loop, result handlers) publish through here.
"""

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from pydantic import JsonValue

from geogate.calls.held import held_names, hold_ops
from geogate.calls.keys import Keys, celery_queue_key, justification_expired_key, justification_required_key
from geogate.eventlog.append import Op
from geogate.eventlog.redaction import redact_event
from geogate.queue.message import queue_message
from schemas import routes
from schemas.codec import encode
from schemas.events import Event, EventData, ToolRequested, ToolSucceeded
from schemas.events.justification import JustificationExpired, PreflightRequired, justification_aggregate
from schemas.events.tool import ClientCapability
from schemas.ids import call_aggregate, new_id
from schemas.tools import ToolSpec
from schemas.tools.handlers import RUN_RESULT_HANDLER
from schemas.tools.tiling import FAN_IN, tile_of


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
    client_capabilities: list[ClientCapability] | None = None,
) -> Event:
    """The `tool.requested` event for validated, normalised `args`, redacted; the arguments redaction changed are
    named in its `held_args` (their values go beside the log: `request_effects`)."""
    queue = str(args[spec.queue_from]) if spec.queue_from and spec.queue_from in args else spec.queue
    data = ToolRequested(
        call_id=call_id,
        tool=spec.name,
        queue=queue,
        args=args,
        timeout_s=timeout_s or spec.timeout_s,
        result_handler=result_handler,
        justified_by=justified_by or [],
        client_capabilities=client_capabilities or [],
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
    redacted = redact_event(event)  # the queue message carries no secret either
    held = held_names(args, redacted.payload(ToolRequested).args)
    if not held:
        return redacted
    return redacted.model_copy(update={"data": redacted.payload(ToolRequested).model_copy(update={"held_args": held})})


def request_effects(event: Event, args: dict[str, JsonValue], keys: Keys, ttl_s: int) -> list[Op]:
    """What a request's append does with it: hold the arguments redaction masked (`args` are the arguments before
    redaction, `ttl_s` the dedupe TTL), then push its queue message."""
    return [*hold_ops(keys, event, args, ttl_s), enqueue_op(event)]


def enqueue_op(event: Event, dispatch: int = 1) -> Op:
    """The push of the Celery message that carries `event` (encoded) to its queue's `run_call` task.

    `dispatch` numbers the message: a worker starts the call only while it is the call's current dispatch, so the
    message a dead worker held is refused if the broker ever hands it out again after a re-dispatch. A re-dispatch
    goes to the head of the queue (kombu pops from the right): the call already waited its turn once.
    A tile goes to one of its queue's tile lists, by the size of its call (`routes.tile_priority`): workers take from
    them only when no call waits, and from a smaller call's tiles before a larger one's.
    """
    data = event.payload(ToolRequested)
    tiles = data.args.get("tiles", 0) if tile_of(data.call_id) else None
    priority = routes.CALL_PRIORITY if tiles is None else routes.tile_priority(int(tiles))  # type: ignore[arg-type]
    message = queue_message(
        routes.run_call_route(data.queue),
        data.queue,
        task_id=data.call_id,
        args=(encode(event), dispatch),
        argsrepr=f"(<tool.requested {data.tool} {data.call_id}>, {dispatch})",
        priority=priority,
    )
    return Op("LPUSH" if dispatch == 1 else "RPUSH", celery_queue_key(data.queue, priority), (message,))


def handler_job_op(succeeded: Event, dispatch: int = 1) -> Op:
    """The LPUSH of the `run_result_handler` job that follows a call's `tool.succeeded`, in the same append.

    The message carries a `tool.requested`-shaped command for `run_result_handler` on the call's aggregate; it is
    never appended itself: the job's own events are `handler.*` on the call.
    """
    command = internal_command(RUN_RESULT_HANDLER, succeeded.payload(ToolSucceeded).call_id)
    return enqueue_op(follow(succeeded, command), dispatch)


def internal_command(spec: ToolSpec, call_id: str) -> ToolRequested:
    """The `tool.requested`-shaped command of internal tool `spec` acting on call `call_id` (its one argument), for
    a queue message; never appended itself."""
    return ToolRequested(
        call_id=call_id, tool=spec.name, queue=spec.queue, args={"call_id": call_id}, timeout_s=spec.timeout_s
    )


def fan_in_op(cause: Event, call_id: str, dispatch: int = 1) -> Op:
    """The push of the fan-in job of tiled call `call_id` (`tiles.fan_in`), caused by `cause` (a tile's outcome,
    the parent's fan-out, or a re-dispatch), to the head of its queue: it ends a call whose tiles already waited
    their turn (and, after a failed tile, it stops the rest sooner). Like a handler job's, the command is never
    appended itself."""
    return pushed_ahead(FAN_IN, cause, call_id, dispatch)


def pushed_ahead(spec: ToolSpec, cause: Event, call_id: str, dispatch: int = 1) -> Op:
    """The push of internal tool `spec`'s job on call `call_id`, caused by `cause`, to the head of its queue."""
    command = internal_command(spec, call_id)
    event = new_event(
        call_aggregate(call_id), command, actor=cause.actor, trace_id=cause.trace_id, causation_id=cause.id
    )
    return replace(enqueue_op(event, dispatch), name="RPUSH")


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


def gate_events(
    required: Sequence[PreflightRequired], expired: Sequence[tuple[JustificationExpired, float]], actor: str
) -> list[tuple[Event, str]]:
    """The events a gate decision appends, each with its dedupe key: expiries first, then the hashes it issues.

    `expired` pairs each `justification.expired` with the `persisted_ts` it ends (one expiry per persisted entry);
    the `preflight.required` of one decision share a request stamp.
    """
    request = f"{time.time_ns()}"
    keyed: list[tuple[EventData, str]] = [(d, justification_expired_key(d.hash, ts)) for d, ts in expired]
    keyed += [(d, justification_required_key(d.hash, request)) for d in required]
    return [(new_event(justification_aggregate(d.hash), d, actor=actor), key) for d, key in keyed]
