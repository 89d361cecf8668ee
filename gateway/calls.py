"""A tool call at the gateway: validate, append `tool.requested` with its queue message, await the outcome."""

import hashlib
import logging
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from eventlog import streams
from eventlog.publish import enqueue_op, request_event
from eventlog.settings import Settings
from eventlog.store import AsyncEventStore
from gateway import results
from gateway.outcomes import OutcomeReader
from schemas.events import Event, ToolCancelRequested, ToolFailed, ToolProgress, ToolSucceeded
from schemas.ids import call_aggregate, new_id
from schemas.tools import ToolSpec
from schemas.validation import ArgumentsInvalid, validate

logger = logging.getLogger(__name__)

IDEMPOTENCY_META = "io.geogate/idempotency-key"


class Gateway:
    """The per-process runtime: the async store and the shared outcome reader (set up in the app lifespan)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store: AsyncEventStore | None = None
        self.reader: OutcomeReader | None = None

    async def start(self) -> None:
        self.store = AsyncEventStore.from_settings(self.settings)
        reader_client = type(self.store.redis).from_url(self.settings.require_redis_url(), decode_responses=False)
        self.reader = OutcomeReader(reader_client, self.store.keys.stream("calls"))
        await self.reader.start()

    async def stop(self) -> None:
        if self.reader is not None:
            await self.reader.stop()
        if self.store is not None:
            await self.store.aclose()

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], ctx: Context | None) -> CallToolResult:
        """Run one `tools/call` through the log; tool errors come back as `isError` results."""
        try:
            valid = validate(spec, arguments)
        except ArgumentsInvalid as exc:
            return results.invalid(exc)
        assert self.store is not None and self.reader is not None, "gateway not started"
        actor, meta = _actor(ctx), _meta(ctx)
        call_id = _call_id(actor, meta.get(IDEMPOTENCY_META))
        event = request_event(spec, valid.args, call_id=call_id, actor=actor, trace_id=_trace_id(meta))
        queue = self.reader.watch(call_id)
        try:
            appended = await self.store.append(event, streams.requested_key(call_id), effects=[enqueue_op(event)])
            if not appended.new and (state := await self.store.call_state(call_id)) and state.terminal:
                return results.from_state(state)
            return await self._await_outcome(call_id, queue, ctx, event.data.timeout_s, valid.aliases_used)  # type: ignore[union-attr]
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._cancel(event)
            raise
        finally:
            self.reader.unwatch(call_id)

    async def _await_outcome(
        self, call_id: str, queue: Any, ctx: Context | None, timeout_s: float, aliases: dict[str, str]
    ) -> CallToolResult:
        extra: dict[str, Any] = {"aliases_used": aliases} if aliases else {}
        with anyio.move_on_after(min(timeout_s, self.settings.call_timeout_s)):
            while True:
                event: Event = await queue.get()
                data = event.data
                if isinstance(data, ToolProgress) and ctx is not None:
                    await ctx.report_progress(data.progress, data.total, data.message)
                elif isinstance(data, ToolSucceeded):
                    return await self._succeeded(call_id, data, extra)
                elif isinstance(data, ToolFailed):
                    return results.failed(call_id, data)
        assert self.store is not None
        state = await self.store.call_state(call_id)
        if state is not None and state.terminal:
            return results.from_state(state)
        return results.timed_out(call_id, min(timeout_s, self.settings.call_timeout_s))

    async def _succeeded(self, call_id: str, data: ToolSucceeded, extra: dict[str, Any]) -> CallToolResult:
        result = data.result
        if data.output_ref is not None:
            assert self.store is not None
            import json

            result = json.loads(await self.store.get_blob(data.output_ref))
            extra = {**extra, "output_ref": data.output_ref.model_dump(mode="json")}
        return results.succeeded(call_id, data, result, extra)

    async def _cancel(self, requested: Event) -> None:
        assert self.store is not None
        call_id = requested.data.call_id  # type: ignore[union-attr]
        cancel = Event(
            id=new_id(),
            aggregate=call_aggregate(call_id),
            ts=requested.ts.now(requested.ts.tzinfo),
            trace_id=requested.trace_id,
            causation_id=requested.id,
            actor=requested.actor,
            data=ToolCancelRequested(call_id=call_id, reason="the client cancelled or disconnected"),
        )
        try:
            await self.store.append(cancel, streams.cancel_key(call_id))
        except Exception:  # the request is already gone; log, never raise from cancellation
            logger.exception("could not record cancellation of call %s", call_id)


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


def _actor(ctx: Context | None) -> str:
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return token.client_id if token is not None else "anonymous"


def _call_id(actor: str, idempotency_key: Any) -> str:
    if not isinstance(idempotency_key, str) or not idempotency_key:
        return new_id()
    return "idem-" + hashlib.sha256(f"{actor}\0{idempotency_key}".encode()).hexdigest()[:32]


def _trace_id(meta: dict[str, Any]) -> str:
    parent = meta.get("traceparent")
    if isinstance(parent, str) and parent.count("-") == 3:
        return parent.split("-")[1]
    return new_id()
