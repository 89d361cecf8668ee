"""`tasks/get`, `tasks/update`, `tasks/cancel` and the `tools/call` interceptor of the tasks extension.

Everything is read from the call projection, so any replica answers for a task another replica created.
"""

import json
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolRequestParams, RequestParams
from pydantic import Field

from gateway import results
from gateway.identity import caller
from gateway.tasks.policy import MODERN, SLOT, TASKS, TaskSlot
from geogate.calls import keys
from geogate.calls.projections.call_state import CallState
from geogate.calls.projections.tasks import TaskView, task_view
from geogate.calls.publish import new_event
from geogate.eventlog.redaction import redact_text
from schemas.events import Event, ToolCancelRequested, ToolInputProvided
from schemas.events.base import EventData
from schemas.ids import call_aggregate
from schemas.tools import SPECS

if TYPE_CHECKING:
    from gateway.runtime import Gateway

HEADER_MISMATCH = -32020
INTERNAL_ERROR = -32603


class TaskIdParams(RequestParams):
    task_id: str = Field(alias="taskId", min_length=1, max_length=200)


class TaskUpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    caps = ctx.session.client_capabilities
    return bool(caps and caps.extensions and TASKS in caps.extensions) and ctx.protocol_version >= MODERN


def _check_name_header(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """SEP-2243: on HTTP, `Mcp-Name` must carry the task id (a load balancer routes by it)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return
    name = headers.get("mcp-name")
    if name != task_id:
        got = "no Mcp-Name header" if name is None else f"Mcp-Name {name!r}"
        raise MCPError(HEADER_MISMATCH, f"{got} does not match params.taskId {task_id!r}")


class TasksExtension(Extension):
    identifier = TASKS

    def __init__(self, runtime: "Gateway") -> None:
        self.runtime = runtime

    def methods(self) -> list[MethodBinding]:
        modern = frozenset({MODERN})
        return [
            MethodBinding("tasks/get", TaskIdParams, self.get, protocol_versions=modern),
            MethodBinding("tasks/update", TaskUpdateParams, self.update, protocol_versions=modern),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel, protocol_versions=modern),
        ]

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if not _declared(ctx):
            if (spec := SPECS.get(params.name)) is not None and spec.task_only:
                require_client_extension(ctx, TASKS)  # raises -32021 naming the extension
            return await call_next(ctx)
        slot = TaskSlot()
        token = SLOT.set(slot)
        try:
            result = await call_next(ctx)
        finally:
            SLOT.reset(token)
        if slot.call_id is None:
            return result
        found = await self._load(slot.call_id)
        assert found is not None, "a task is durable in the log before its handle is sent"
        created = {"resultType": "task", **self._envelope(found[0])}
        created.pop("inputRequests", None)  # they belong on tasks/get (DetailedTask), never on CreateTaskResult
        return created

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        view, state = await self._find(ctx, params.task_id)
        detailed: dict[str, Any] = {"resultType": "complete", **self._envelope(view)}
        if view.status == "completed":
            detailed["result"] = await self._result(state)
        elif view.status == "failed":
            detailed["error"] = {
                "code": INTERNAL_ERROR,
                "message": redact_text(state.error_message or "the task failed"),
                "data": {"code": state.error_code, "call_id": state.call_id},
            }
        return detailed

    async def update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams) -> dict[str, Any]:
        """Record the answers to pending input requests, one `tool.input_provided` each; other keys are ignored
        (partial answers are fine: the task stays `input_required` until every request has one)."""
        view, state = await self._find(ctx, params.task_id)
        pending = view.input_requests or {}
        store = self.runtime.store
        assert store is not None
        for key, response in params.input_responses.items():
            if key not in pending:
                continue
            data = ToolInputProvided(call_id=state.call_id, key=key, response=response)
            await store.append(self._event(state, data), keys.input_answer_key(state.call_id, key))
        return {"resultType": "complete"}

    async def cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        """Cooperative: records `tool.cancel_requested`; the worker stops at its next progress report."""
        view, state = await self._find(ctx, params.task_id)
        if view.status in ("working", "input_required"):
            store = self.runtime.store
            assert store is not None
            data = ToolCancelRequested(call_id=state.call_id, reason="tasks/cancel")
            await store.append(self._event(state, data), keys.cancel_key(state.call_id))
        return {"resultType": "complete"}

    def _event(self, state: CallState, data: EventData) -> Event:
        return new_event(call_aggregate(state.call_id), data, actor=caller(), trace_id=state.trace_id or None)

    def _envelope(self, view: TaskView) -> dict[str, Any]:
        settings = self.runtime.settings
        out: dict[str, Any] = {
            "taskId": view.task_id,
            "status": view.status,
            "createdAt": view.created_at,
            "lastUpdatedAt": view.last_updated_at,
            "ttlMs": settings.task_ttl_s * 1000,
            "pollIntervalMs": settings.task_poll_interval_ms,
        }
        if view.status_message:
            out["statusMessage"] = view.status_message
        if view.input_requests:
            out["inputRequests"] = view.input_requests
        return out

    async def _load(self, call_id: str) -> tuple[TaskView, CallState] | None:
        store = self.runtime.store
        assert store is not None, "gateway not started"
        raw = await store.redis.hgetall(store.live.call(call_id))
        state = CallState.from_hash(call_id, raw)
        return None if state is None else (task_view(state, raw), state)

    async def _find(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> tuple[TaskView, CallState]:
        """The caller's task, or `-32021` (extension not declared), `-32020` (header), `-32602` (unknown)."""
        require_client_extension(ctx, TASKS)
        _check_name_header(ctx, task_id)
        found = await self._load(task_id)
        if found is None or found[0].actor != caller() or found[0].expired(self.runtime.settings.task_ttl_s):
            raise MCPError(INVALID_PARAMS, f"Task not found: {task_id}")
        return found

    async def _result(self, state: CallState) -> dict[str, Any]:
        """The `CallToolResult` the call would have returned, from the projection (and the blob store)."""
        store = self.runtime.store
        assert store is not None
        if state.status == "succeeded" and state.output_ref is not None:
            state = state.model_copy(update={"result": json.loads(await store.get_blob(state.output_ref))})
        result = results.from_state(state).model_dump(by_alias=True, mode="json", exclude_none=True)
        return {**result, "resultType": "complete"}
