"""The `ask` job: the chat loop on the `llm` queue, every model attempt and every tool call recorded in the log."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio
import redis.asyncio as aredis
from pydantic import JsonValue

from geogate.calls import keys
from geogate.calls.store import EventStore
from geogate.ratelimit import Limiter, Limits
from geogate.settings import LLMSettings, Settings
from schemas.chat import ChatRequest
from schemas.events import Event, EventData, ToolStarted, ToolSucceeded
from schemas.events.llm import LLMAttempted, LLMConversationStarted, conversation_aggregate
from schemas.ids import call_aggregate, new_id
from schemas.preflight.gate import PreflightMissing
from schemas.tools import TOOLS, TOOLSET, ToolSpec
from schemas.tools.llm import AskArgs, AskResult
from schemas.tools.toolsets import published, unpublished_message
from schemas.validation import ArgumentsInvalid
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.llm.config import config_for, policy_for
from workers.llm.errors import ProviderError
from workers.llm.loop import run_chat
from workers.llm.providers import build_provider, http_client
from workers.llm.xray_events import load_conversation, xray_from_events
from workers.run.calling import CallTimedOut, call_tool

ToolReply = tuple[JsonValue, str, bool]


def tool_definitions(specs: dict[str, ToolSpec] | None = None) -> list[dict[str, Any]]:
    """MCP tool definitions of the registry as it is now (`ask` itself left out): what the model may call."""
    found = TOOLS if specs is None else specs
    return [_definition(spec) for name, spec in found.items() if name != "ask"]


def published_specs(settings: Settings) -> dict[str, ToolSpec]:
    """The tools this deployment publishes (`GEOGATE_TOOLSETS`): the only ones its model may call."""
    shown = published(settings.toolsets)
    return {name: spec for name, spec in TOOLS.items() if TOOLSET[name] in shown}


def _definition(spec: ToolSpec) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.args.model_json_schema(),
    }
    if spec.aliases:
        tool["_meta"] = {"aliases": dict(spec.aliases)}
    return tool


def ask(args: AskArgs, ctx: JobContext) -> AskResult:
    """Answer `args.question` with the registry's tools; the X-ray is rebuilt from the events afterwards.

    Raises:
        JobFailed: over the client's rate limit (`llm.rate_limited`), no model server answering at the configured
            address (`llm.unavailable`, at once, naming the settings), or the model's server kept failing
            (`llm.provider_error`).
    """
    if ctx.store is None or ctx.settings is None:
        raise JobFailed("llm.unconfigured", "the ask job needs the event store and settings")
    return anyio.run(_ask, args, ctx, ctx.store, ctx.settings.llm)


async def _ask(args: AskArgs, ctx: JobContext, store: EventStore, llm: LLMSettings) -> AskResult:
    assert ctx.settings is not None, "checked by ask"
    await _check_rate(store, ctx, llm)
    log = ConversationLog.open(store, ctx)
    caller = ToolCaller(store, ctx, log, llm.tool_timeout_s)
    request = ChatRequest(message=args.question, history=args.history, conversation_id=ctx.call_id, client_id=ctx.actor)
    config = config_for(llm, args.model)
    async with http_client(config) as client:
        try:
            answer = await run_chat(
                request,
                provider=build_provider(config, client),
                tools=tool_definitions(published_specs(ctx.settings)),
                call_tool=caller,
                policy=policy_for(llm, args),
                on_attempt=log.attempted,
                on_lifecycle=log.lifecycle,
            )
        except ProviderError as exc:
            if exc.code == "llm.unreachable":
                raise no_model(llm, exc.message) from exc
            raise JobFailed("llm.provider_error", f"the model server failed: {exc.message}", retryable=True) from exc
    xray = xray_from_events(load_conversation(store, ctx.call_id, caller.call_ids))
    return AskResult(**answer.model_dump(exclude={"xray"}), xray=xray)


def no_model(llm: LLMSettings, reason: str) -> JobFailed:
    """`llm.unavailable`: no model answers, with the settings that configure one. Not retryable when none is
    configured (the default local address was tried), retryable when the configured server is down."""
    configured = bool(llm.model_fields_set & {"base_url", "model", "provider"})
    where = (
        f"GEOGATE_LLM_BASE_URL is {llm.base_url}"
        if configured
        else f"no model is configured (GEOGATE_LLM_BASE_URL is unset, so the default {llm.base_url} was tried)"
    )
    how = (
        "set GEOGATE_LLM_BASE_URL to an OpenAI-compatible server up to its version segment (Ollama: "
        "http://127.0.0.1:11434/v1, vLLM, llama.cpp, LM Studio, https://api.openai.com/v1) or to "
        "https://api.anthropic.com with GEOGATE_LLM_PROVIDER=anthropic, GEOGATE_LLM_MODEL to a model it serves, and "
        "GEOGATE_LLM_API_KEY if it needs one, in the workers' environment"
    )
    return JobFailed(
        "llm.unavailable", f"ask: no language model answers: {where}; {reason}. To use ask, {how}", retryable=configured
    )


async def _check_rate(store: EventStore, ctx: JobContext, llm: LLMSettings) -> None:
    """Count this request against the actor's per-minute limit in Redis.

    Raises:
        JobFailed: `llm.rate_limited` (retryable) when the actor is over the limit.
    """
    assert ctx.settings is not None
    client = aredis.Redis.from_url(ctx.settings.require_redis_url())
    limit = llm.rate_limit_per_minute
    try:
        decision = await Limiter(client, store.keys, keys.LLM, count_refused=True).acquire(ctx.actor, Limits(limit))
    finally:
        await client.aclose()
    if not decision.allowed:
        message = f"{ctx.actor} made more than {limit} requests per minute; try again in {decision.retry_after_s} s"
        raise JobFailed("llm.rate_limited", message, retryable=True)


@dataclass
class ConversationLog:
    """Appends the conversation's events (`conversation:<call id>`), idempotently per run of the job."""

    store: EventStore
    ctx: JobContext
    run: str
    """The runner attempt of this job: a redelivered job records a new run instead of colliding with the old."""
    cause: str | None
    """The event the next one follows: `tool.started` of the ask call, then the latest conversation event."""
    attempts: int = 0

    @classmethod
    def open(cls, store: EventStore, ctx: JobContext) -> "ConversationLog":
        """The log of this run, found from the ask call's latest `tool.started`."""
        started = [e for e in store.read_aggregate(call_aggregate(ctx.call_id)) if isinstance(e.data, ToolStarted)]
        if not started:
            return cls(store, ctx, "0", None)
        return cls(store, ctx, started[-1].payload(ToolStarted).attempt, started[-1].id)

    def append(self, data: EventData, step: str) -> Event:
        """Append `data` after the previous event; the dedupe key names the run and the step."""
        event = Event(
            id=new_id(),
            aggregate=conversation_aggregate(self.ctx.call_id),
            ts=datetime.now(UTC),
            trace_id=self.ctx.trace_id or new_id(),
            causation_id=self.cause,
            actor=self.ctx.actor,
            data=data,  # type: ignore[arg-type]
        )
        self.store.append(event, keys.conversation_step_key(self.ctx.call_id, self.run, step))
        self.cause = event.id
        return event

    def attempted(self, data: LLMAttempted) -> None:
        """Record one model attempt and report it as progress (which stops the job if the call was cancelled)."""
        self.append(data, keys.attempt_step(data.turn, data.attempt))
        self.attempts += 1
        kind = f" ({data.error_kind})" if data.error_kind else ""
        self.ctx.progress(self.attempts, None, f"turn {data.turn}, model attempt {data.attempt}: {data.outcome}{kind}")

    def lifecycle(self, data: EventData) -> None:
        """Record the conversation's start or finish."""
        self.append(data, "started" if isinstance(data, LLMConversationStarted) else "finished")


@dataclass
class ToolCaller:
    """`call_tool` for the loop: each call goes through `workers.run.calling`, planned and gated like a client's."""

    store: EventStore
    ctx: JobContext
    log: ConversationLog
    timeout_s: float
    call_ids: list[str] = field(default_factory=list)

    async def __call__(self, name: str, params: dict[str, JsonValue]) -> ToolReply:
        """Run `name` with `params` and return `(result, text, is_error)`; refusals never reach a worker."""
        spec = TOOLS.get(name)
        if spec is None or name == "ask":
            return _error({"code": "tool.unknown", "message": f"no tool {name!r} may be called here"})
        if self.ctx.settings is not None and name not in published_specs(self.ctx.settings):
            message = unpublished_message(name, TOOLSET[name], self.ctx.settings.toolsets)
            return _error({"code": "tool.unpublished", "message": message})
        call = partial(
            call_tool,
            self.store,
            spec,
            params,
            actor=self.ctx.actor,
            timeout_s=min(spec.timeout_s, self.timeout_s),
            trace_id=self.ctx.trace_id or None,
            causation_id=self.log.cause,
            ttl_for=self.ctx.ttl_for,
        )
        try:
            outcome = await anyio.to_thread.run_sync(call)
        except ArgumentsInvalid as exc:
            return _error({"code": exc.code, "message": str(exc), "errors": [e.as_dict() for e in exc.errors]})
        except PreflightMissing as exc:
            return _error(
                {"code": exc.code, "message": str(exc), "preflight": {"tool": name, "required": exc.required}}
            )
        except CallTimedOut as exc:
            self.call_ids.append(exc.call_id)
            return _error({"code": exc.code, "message": str(exc), "call_id": exc.call_id})
        self.call_ids.append(outcome.aggregate.split(":", 1)[1])
        return await anyio.to_thread.run_sync(self._reply, outcome)

    def _reply(self, outcome: Event) -> ToolReply:
        data = outcome.data
        if not isinstance(data, ToolSucceeded):
            return _error(data.model_dump(mode="json", include={"code", "message", "field", "retryable"}))
        result = self.store.value_of(data.result, data.output_ref)
        return result, data.text, False


def _error(error: dict[str, Any]) -> ToolReply:
    return {"error": error}, str(error.get("message", "")), True
