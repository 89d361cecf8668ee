"""A running job's questions to the client that waits for its call, and its log lines for that client.

The job appends `tool.input_requested` and waits (`ask_client` in `workers.jobkit.inputs`). The gateway waiting for the
call answers with the answers it holds (those the request carried, MRTR), then asks what is left: on 2026-07-28 it
returns `input_required` whose sealed `requestState` names the call, and the client's retry resumes the same call; on
2025-11-25 it sends each question over the session. Every answer becomes a `tool.input_provided` of the call, so the
conversation is in the log. A call that is a task is asked through the tasks extension instead (`tasks/update`).
"""

import json
import logging
import warnings
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitResult,
    InputRequest,
    InputRequiredResult,
    ListRootsResult,
)
from pydantic import BaseModel, TypeAdapter, ValidationError

from gateway.identity import caller
from gateway.preflight.sampling import is_modern
from geogate.calls import keys
from geogate.calls.projections.tasks import inputs
from geogate.calls.publish import new_event
from geogate.calls.store import AsyncEventStore
from schemas.events import Event, ToolCancelRequested, ToolInputProvided
from schemas.events.base import EventData
from schemas.events.tool import ClientCapability, ToolLogged
from schemas.ids import call_aggregate
from schemas.tools import ToolSpec

logger = logging.getLogger(__name__)

STATE_KEY = "geogate_call"
"""The `requestState` field naming the call a retry resumes (the SDK seals the state: a client cannot forge it)."""
ASKABLE: tuple[ClientCapability, ...] = ("sampling", "elicitation", "roots")
ANSWERS: dict[str, tuple[type[BaseModel], ...]] = {
    "sampling/createMessage": (CreateMessageResult, CreateMessageResultWithTools),
    "elicitation/create": (ElicitResult,),
    "roots/list": (ListRootsResult,),
}
"""What answers each kind of question; an answer of another kind is not taken (the question is asked again)."""
_QUESTION: TypeAdapter[InputRequest] = TypeAdapter(InputRequest)


@dataclass(frozen=True)
class Resumed:
    """What an MRTR retry's `requestState` says about the call it continues."""

    call_id: str
    timeout_s: float
    handled: bool


def _of_request(ctx: Context | None, name: str) -> Any:
    """One property of the request behind `ctx`, or None: no context, outside a request, or a stand-in context (the
    chat route's) that carries only what its own calls need."""
    try:
        return getattr(ctx, name, None)
    except ValueError:
        return None


def declared(ctx: Context | None) -> list[ClientCapability]:
    """The client capabilities of this request that let a job ask the client something."""
    caps = _of_request(ctx, "client_capabilities")
    return [name for name in ASKABLE if caps is not None and getattr(caps, name, None) is not None]


def require(spec: ToolSpec, ctx: Context | None) -> None:
    """Refuse a tool whose job needs what the client did not declare, before any call is made.

    Raises:
        MCPError: `-32021` with `data.requiredCapabilities` naming what is missing.
    """
    missing = sorted(spec.client_needs - set(declared(ctx)))
    if missing:
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"{spec.name} needs the client capabilities {', '.join(missing)}",
            data={"requiredCapabilities": {name: {} for name in missing}},
        )


def resumed(ctx: Context | None) -> Resumed | None:
    """The call an MRTR retry continues, or None for a request that starts a call (no state, or another flow's)."""
    text = _of_request(ctx, "request_state")
    try:
        state = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(state, dict) or not isinstance(state.get(STATE_KEY), str):
        return None
    return Resumed(state[STATE_KEY], float(state.get("timeout_s", 60.0)), bool(state.get("handled")))


def _given(ctx: Context | None) -> dict[str, Any]:
    return dict(_of_request(ctx, "input_responses") or {})


class InputRelay:
    """Answers a waiting call's pending questions for the client behind `ctx`."""

    def __init__(self, store: AsyncEventStore) -> None:
        self.store = store

    async def on_questions(self, call_id: str, ctx: Context | None, resume: Resumed) -> InputRequiredResult | None:
        """Record the answers at hand, ask the rest; an `input_required` result to return, or None to keep waiting."""
        raw = await self.store.redis.hgetall(self.store.live.call(call_id))
        pending, _ = inputs(raw)
        trace_id = raw.get(b"trace_id", b"").decode() or None
        pending = await self._take_given(call_id, trace_id, pending, _given(ctx))
        if not pending:
            return None
        try:
            questions = {key: _QUESTION.validate_python(request) for key, request in pending.items()}
        except ValidationError:
            await self._cancel(call_id, trace_id, "the job asked a question that is not a valid MCP request")
            return None
        if ctx is None or _of_request(ctx, "session") is None:
            await self._cancel(call_id, trace_id, "the job asked a question and no client waits for the call")
            return None
        if is_modern(ctx):
            state = {STATE_KEY: call_id, "timeout_s": resume.timeout_s, "handled": resume.handled}
            return InputRequiredResult(input_requests=questions, request_state=json.dumps(state))
        await self._ask_over_session(call_id, trace_id, questions, ctx)
        return None

    async def _take_given(
        self, call_id: str, trace_id: str | None, pending: dict[str, Any], given: dict[str, Any]
    ) -> dict[str, Any]:
        left = {}
        for key, request in pending.items():
            answer = given.get(key)
            if isinstance(answer, ANSWERS.get(str(request.get("method")), ())):
                await self._record(call_id, trace_id, key, answer)
            else:
                left[key] = request
        return left

    async def _ask_over_session(
        self, call_id: str, trace_id: str | None, questions: dict[str, Any], ctx: Context
    ) -> None:
        for key, question in questions.items():
            answer_type = ANSWERS[question.method][0]
            try:
                answer = await ctx.session.send_request(
                    question, answer_type, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
                )
            except MCPError as exc:
                await self._cancel(call_id, trace_id, f"the client could not answer {key!r}: {exc.error.message}")
                return
            await self._record(call_id, trace_id, key, answer)

    async def _record(self, call_id: str, trace_id: str | None, key: str, answer: BaseModel) -> None:
        response = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        data = ToolInputProvided(call_id=call_id, key=key, response=response)
        await self.store.append(self._event(call_id, trace_id, data), keys.input_answer_key(call_id, key))

    async def _cancel(self, call_id: str, trace_id: str | None, reason: str) -> None:
        logger.warning("call %s: %s", call_id, reason)
        data = ToolCancelRequested(call_id=call_id, reason=reason[:500])
        await self.store.append(self._event(call_id, trace_id, data), keys.cancel_key(call_id))

    def _event(self, call_id: str, trace_id: str | None, data: EventData) -> Event:
        return new_event(call_aggregate(call_id), data, actor=caller(), trace_id=trace_id)


async def relay_log(ctx: Context, line: ToolLogged) -> None:
    """Send a job's log line to the client (`notifications/message`; on 2026-07-28 only when the request asked)."""
    session = _of_request(ctx, "session")
    if session is None:  # a stand-in context (the chat route reads the log itself)
        return
    with warnings.catch_warnings():  # deprecated on 2026-07-28 (SEP-2577), still the way to reach 2025-11-25
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        sending = session.send_log_message(line.level, line.message, line.logger, related_request_id=ctx.request_id)
    await sending
