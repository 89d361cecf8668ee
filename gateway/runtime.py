"""The gateway's runtime (`Gateway`): the async shell of the call plan.

A call is planned (`schemas.call_plan`), gated (`gateway.preflight`), appended as `tool.requested` with its queue
message, and answered when the shared outcome reader (`gateway.outcomes`) sees its outcome.
"""

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, InputRequiredResult

from gateway import input_relay, results
from gateway.identity import caller
from gateway.outcomes import OutcomeReader
from gateway.preflight.flow import preflight
from gateway.preflight.gate import Gate
from gateway.tasks.policy import became_task, synchronous, wait_before_task
from geogate.calls import keys
from geogate.calls.projections.handlers import HandlerState
from geogate.calls.publish import follow, new_event, request_effects, request_event
from geogate.calls.store import AsyncEventStore
from geogate.eventlog.store import async_client
from geogate.settings import Settings
from schemas.call_plan import plan_call
from schemas.events import (
    Event,
    HandlerFailed,
    HandlerSucceeded,
    OutputRef,
    ToolCancelRequested,
    ToolFailed,
    ToolInputRequested,
    ToolLogged,
    ToolProgress,
    ToolRequested,
    ToolSucceeded,
)
from schemas.ids import call_aggregate, new_id
from schemas.preflight.keys import Needed
from schemas.tools import ToolSpec
from schemas.tools.handlers import HANDLER_META
from schemas.tools.llm import JUSTIFY_CHOICE
from schemas.validation import ArgumentsInvalid

logger = logging.getLogger(__name__)

IDEMPOTENCY_META = "io.geogate/idempotency-key"
WAKES = (ToolProgress, ToolLogged, ToolInputRequested, ToolSucceeded, ToolFailed, HandlerSucceeded, HandlerFailed)
"""The events a waiting call acts on (`Gateway._on_event`); the reader hands it no others (its own `tool.requested`,
`tool.started`, …), and does not decode them."""
WAKE_TYPES = frozenset(kind.model_fields["type"].default for kind in WAKES)
HANDLER_EXTRA_S = 30.0
"""How much longer than the tool's timeout a call with a result handler may wait (the handler's own run)."""


class Gateway:
    """The per-process runtime: the async store and the shared outcome reader (set up in the app lifespan)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store: AsyncEventStore | None = None
        self.reader: OutcomeReader | None = None

    async def start(self) -> None:
        self.store = AsyncEventStore.from_settings(self.settings)
        reader_client = async_client(self.settings.require_redis_url())
        self.reader = OutcomeReader(
            reader_client,
            self.store.keys.stream(keys.CALLS),
            also=(self.store.keys.stream(keys.LLM),),
            checkpoints=self.store.keys.checkpoints(),
            wakes=WAKE_TYPES,
        )
        await self.reader.start()

    async def stop(self) -> None:
        if self.reader is not None:
            await self.reader.stop()
        if self.store is not None:
            await self.store.aclose()

    async def call(
        self, spec: ToolSpec, arguments: dict[str, Any], ctx: Context | None
    ) -> CallToolResult | InputRequiredResult:
        """Run one `tools/call` through the log; tool errors come back as `isError` results.

        With a `result_handler` (argument or `_meta`), the answer is the handler's outcome, not the tool's. An MRTR
        retry whose `requestState` names a call continues that call (`gateway.input_relay`) instead of starting one.

        Raises:
            MCPError: `-32021`, the tool needs a client capability the client did not declare.
        """
        input_relay.require(spec, ctx)
        if (resume := input_relay.resumed(ctx)) is not None:
            return await self._resume(spec, resume, ctx)
        actor, meta = caller(ctx), _meta(ctx)
        try:
            plan = plan_call(spec, arguments, meta.get(HANDLER_META), handlers=True)
        except ArgumentsInvalid as exc:
            return results.invalid(exc)
        assert self.store is not None and self.reader is not None, "gateway not started"
        server_justify = self._server_justify if self.settings.preflight_server_llm else None
        gated = await preflight(Gate(self.store, self.settings), plan, ctx, actor, server_justify)
        if gated.answer is not None:
            return gated.answer  # the hint, or (2026-07-28) the sampling request that obtains the justification
        call_id = _call_id(actor, meta.get(IDEMPOTENCY_META))
        handler = plan.handler
        event = request_event(
            spec,
            plan.args,
            call_id=call_id,
            actor=actor,
            trace_id=_trace_id(meta),
            result_handler=handler,
            justified_by=gated.justified_by,
            client_capabilities=input_relay.declared(ctx),
        )
        timeout_s = event.payload(ToolRequested).timeout_s
        wait = _Wait(call_id, ctx, timeout_s, plan.valid.aliases_used, handled=handler is not None)
        queue = self.reader.watch(call_id)
        try:
            effects = request_effects(event, plan.args, self.store.keys, self.store.dedupe_ttl_s)
            appended = await self.store.append(event, keys.requested_key(call_id), effects=effects)
            if not appended.new and (early := await self._so_far(wait)) is not None:
                return early  # a retried idempotent call: its outcome, or the question it waits on
            return await self._answer(spec, queue, wait)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(follow(event, _cancelled(call_id)))
            raise
        finally:
            self.reader.unwatch(call_id)

    async def _resume(
        self, spec: ToolSpec, resume: "input_relay.Resumed", ctx: Context | None
    ) -> CallToolResult | InputRequiredResult:
        """Continue a call whose job asked the client: record the retry's answers, then wait as `call` does.

        Raises:
            MCPError: `-32602`, the state names no call of this client's for this tool.
        """
        assert self.store is not None and self.reader is not None, "gateway not started"
        state = await self.store.call_state(resume.call_id)
        if state is None or state.tool != spec.name or state.actor != caller(ctx):
            raise MCPError(INVALID_PARAMS, "requestState names no call of yours", data={"reason": "unknown_call"})
        wait = _Wait(state.call_id, ctx, resume.timeout_s, {}, handled=resume.handled)
        queue = self.reader.watch(state.call_id)
        try:
            if (early := await self._so_far(wait)) is not None:
                return early  # the call ended meanwhile, or the retry did not answer everything: ask again
            return await self._answer(spec, queue, wait, resumed=True)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                cancel = new_event(call_aggregate(state.call_id), _cancelled(state.call_id), actor=state.actor)
                await self._cancel(cancel)
            raise
        finally:
            self.reader.unwatch(state.call_id)

    async def _so_far(self, wait: "_Wait") -> CallToolResult | InputRequiredResult | None:
        """What a call that was already under way has to say now: its outcome, or its unanswered questions."""
        if (done := await self._from_projection(wait)) is not None:
            return done
        return await self._input_relay().on_questions(wait.call_id, wait.ctx, wait.resume)

    async def _answer(
        self, spec: ToolSpec, queue: Any, wait: "_Wait", resumed: bool = False
    ) -> CallToolResult | InputRequiredResult:
        """The call's outcome, or a task handle once the wait passes the task threshold (clients that declared it)."""
        task_after_s = None if wait.handled else wait_before_task(spec, self.settings.task_after_s, resumed)
        if task_after_s is None:
            return await self._await_outcome(queue, wait)
        with anyio.move_on_after(task_after_s):  # a client that declared tasks gets a handle past this wait
            return await self._await_outcome(queue, wait)
        became_task(wait.call_id)
        return results.task_created(wait.call_id)

    async def run(self, spec: ToolSpec, arguments: dict[str, Any], ctx: Context | None = None) -> CallToolResult:
        """`call` for the gateway's own jobs (resources, chat, justifications), which never ask the client for input.

        Raises:
            RuntimeError: the spec is gated and would need the client's input (a programming error).
        """
        with synchronous():
            result = await self.call(spec, arguments, ctx)
        if isinstance(result, InputRequiredResult):
            raise RuntimeError(f"{spec.name} needs client input; the gateway's own calls cannot give it")
        return result

    async def _server_justify(self, item: Needed) -> dict[str, Any] | None:
        """One justification from the server-side model, through the `llm` queue like any job."""
        args = {"domain": item.domain, "prompt": item.prompt, "prompt_args": item.prompt_args}
        result = await self.run(JUSTIFY_CHOICE, args)
        if not result.is_error and isinstance(result.structured_content, dict):
            return result.structured_content.get("justification")
        return None

    async def _await_outcome(self, queue: Any, wait: "_Wait") -> CallToolResult | InputRequiredResult:
        limit = min(wait.timeout_s + (HANDLER_EXTRA_S if wait.handled else 0.0), self.settings.call_timeout_s)
        with anyio.move_on_after(limit):
            while True:
                event: Event = await queue.get()
                if (result := await self._on_event(event.data, wait)) is not None:
                    return result
        if (done := await self._from_projection(wait)) is not None:
            return done
        return results.timed_out(wait.call_id, limit)

    async def _on_event(self, data: Any, wait: "_Wait") -> CallToolResult | InputRequiredResult | None:
        if isinstance(data, ToolProgress) and wait.ctx is not None:
            await wait.ctx.report_progress(data.progress, data.total, data.message)
        elif isinstance(data, ToolLogged) and wait.ctx is not None:
            await input_relay.relay_log(wait.ctx, data)
        elif isinstance(data, ToolInputRequested):
            return await self._input_relay().on_questions(wait.call_id, wait.ctx, wait.resume)
        elif isinstance(data, ToolSucceeded) and not wait.handled:
            return await self._succeeded(wait.call_id, data, wait.extra)
        elif isinstance(data, ToolFailed):
            return results.failed(wait.call_id, data)
        elif isinstance(data, HandlerSucceeded):
            value = await self._value(data.value, data.value_ref)
            return results.handled(wait.call_id, data, value)
        elif isinstance(data, HandlerFailed):
            return results.handler_failed(wait.call_id, data)
        return None

    async def _from_projection(self, wait: "_Wait") -> CallToolResult | None:
        """The call's answer from its projections once final (a duplicate call, a missed wake-up), else None."""
        assert self.store is not None
        state = await self.store.call_state(wait.call_id)
        if state is None or not state.terminal:
            return None
        if not wait.handled or state.status == "failed":
            return results.from_state(state)
        raw = await self.store.redis.hgetall(self.store.live.handler(wait.call_id))
        handler = HandlerState.from_hash(wait.call_id, raw)
        if handler is None or not handler.terminal:
            return None
        value = await self._value(handler.value, handler.value_ref)
        return results.from_handler_state(handler, value)

    async def _value(self, inline: Any, ref: OutputRef | None) -> Any:
        assert self.store is not None
        return await self.store.value_of(inline, ref)

    async def _succeeded(self, call_id: str, data: ToolSucceeded, extra: dict[str, Any]) -> CallToolResult:
        result = await self._value(data.result, data.output_ref)
        if data.output_ref is not None:
            extra = {**extra, "output_ref": data.output_ref.model_dump(mode="json")}
        return results.succeeded(call_id, data, result, extra)

    async def _cancel(self, cancel: Event) -> None:
        assert self.store is not None
        call_id = cancel.payload(ToolCancelRequested).call_id
        try:
            await self.store.append(cancel, keys.cancel_key(call_id))
        except Exception:  # the request is already gone; log, never raise from cancellation
            logger.exception("could not record cancellation of call %s", call_id)

    def _input_relay(self) -> input_relay.InputRelay:
        assert self.store is not None, "gateway not started"
        return input_relay.InputRelay(self.store)


def _cancelled(call_id: str) -> ToolCancelRequested:
    return ToolCancelRequested(call_id=call_id, reason="the client cancelled or disconnected")


@dataclass(frozen=True)
class _Wait:
    """What awaiting one call needs: who to tell about progress, how long, and which outcome ends it."""

    call_id: str
    ctx: Context | None
    timeout_s: float
    aliases: dict[str, str]
    handled: bool
    """The call carries a result handler: its `handler.*` outcome ends the wait, not `tool.succeeded`."""

    @property
    def extra(self) -> dict[str, Any]:
        return {"aliases_used": self.aliases} if self.aliases else {}

    @property
    def resume(self) -> "input_relay.Resumed":
        """What a retry needs to continue this call, should its job ask the client something."""
        return input_relay.Resumed(self.call_id, self.timeout_s, self.handled)


def _meta(ctx: Context | None) -> dict[str, Any]:
    if ctx is None:
        return {}
    try:
        meta = ctx.request_context.meta
    except ValueError:
        return {}
    if meta is None:
        return {}
    return meta if isinstance(meta, dict) else meta.model_dump(by_alias=True, exclude_none=True)


def _call_id(actor: str, idempotency_key: Any) -> str:
    if not isinstance(idempotency_key, str) or not idempotency_key:
        return new_id()
    return "idem-" + hashlib.sha256(f"{actor}\0{idempotency_key}".encode()).hexdigest()[:32]


def _trace_id(meta: dict[str, Any]) -> str:
    parent = meta.get("traceparent")
    if isinstance(parent, str) and parent.count("-") == 3:
        return parent.split("-")[1]
    return new_id()
