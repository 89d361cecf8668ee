"""The chat loop: ask the model, validate and run its calls in parallel, retry its mistakes, answer with an X-ray."""

import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from schemas.chat import (
    AnswerItem,
    ChatAnswer,
    ChatOutcome,
    ChatRequest,
    ChatStreamItem,
    ExtractionError,
    ProgressItem,
    ToolCallItem,
    XRayItem,
)
from schemas.events.base import EventData
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted
from workers.llm.config import LoopPolicy
from workers.llm.errors import ProviderError
from workers.llm.planned import CallTool, ReadReply, failed_reply_text, read_completion, result_messages, run_parallel
from workers.llm.prompts import FINAL_ANSWER_NOW, system_prompt, template_for
from workers.llm.providers.base import Completion, Message, Provider
from workers.llm.retry import retry_prompt
from workers.llm.safety import offered_tools, trim_to_budget
from workers.llm.validation import build_index
from workers.llm.xray import XRayRecorder

REASONING_CHARS = 20_000
"""Reasoning kept in an `llm.attempt` event; longer reasoning is cut (the log is not a transcript store)."""

OnEvent = Callable[[Any], Awaitable[None] | None]
"""Receives each event payload (`LLMAttempted`, and for `on_lifecycle` the started/finished events)."""


@dataclass
class _Turn:
    """How one turn ended: calls to run, an answer, or the reason it stopped."""

    reply: ReadReply | None = None
    completion: Completion | None = None
    outcome: ChatOutcome | None = None
    errors: list[ExtractionError] = field(default_factory=list)


@dataclass
class _Conversation:
    """The state of one request while the loop runs."""

    request: ChatRequest
    provider: Provider
    policy: LoopPolicy
    tools: list[dict[str, Any]]
    recorder: XRayRecorder
    on_attempt: OnEvent | None
    call_tool: CallTool
    exchange: list[Message] = field(default_factory=list)
    attempts: int = 0
    calls_made: int = 0
    tokens: int = 0

    def __post_init__(self) -> None:
        self.native = self.provider.capability.native_tools
        self.template = template_for(self.provider.capability.template)
        self.index = build_index(self.tools, self.policy.blocked_tools)
        self.system = Message("system", system_prompt(self.tools, self.template, native=self.native))
        self.history = [Message(m.role, m.content) for m in self.request.history]
        self.budget = min(
            self.policy.max_prompt_tokens,
            self.provider.capability.context_tokens - self.policy.max_completion_tokens,
        )

    def prompt(self, extra: Sequence[Message]) -> list[Message]:
        tail = [Message("user", self.request.message), *self.exchange, *extra]
        return trim_to_budget(self.system, self.history, tail, self.budget)

    def remaining_calls(self) -> int:
        return self.policy.max_tool_calls - self.calls_made


async def stream_chat(
    request: ChatRequest,
    *,
    provider: Provider,
    tools: Sequence[dict[str, Any]],
    call_tool: CallTool,
    policy: LoopPolicy | None = None,
    on_attempt: OnEvent | None = None,
    on_lifecycle: OnEvent | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> AsyncIterator[ChatStreamItem]:
    """Answer `request` with the tools, yielding progress, each tool call, the X-ray, and the answer (last).

    Args:
        request: The question, earlier turns and ids.
        provider: The chat model.
        tools: MCP tool definitions discovered at run time; blocked ones are never offered or run.
        call_tool: Runs one validated call; it goes through the gateway's validation and the event log.
        policy: Attempts, temperatures and limits.
        on_attempt: Gets an `LLMAttempted` for every model attempt (sync or async callable).
        on_lifecycle: Gets `LLMConversationStarted` first and `LLMConversationFinished` last.
        clock: Seconds as a float; the X-ray's times come from it.

    Raises:
        ProviderError: the provider kept failing after backoff (recorded as a `provider_error` attempt).
    """
    policy = policy or LoopPolicy()
    offered = offered_tools(tools, policy.blocked_tools)
    conv = _Conversation(request, provider, policy, offered, XRayRecorder(clock), on_attempt, call_tool)
    await _emit(on_lifecycle, _started(conv))
    conv.recorder.mark("conversation started")
    yield ProgressItem(message=f"asking {provider.model}")
    turn = await _next_turn(conv, 1)
    for number in range(2, policy.max_turns + 2):
        if turn.reply is None or turn.completion is None or not turn.reply.calls:
            break
        yield ProgressItem(message="calling " + ", ".join(c.call.tool for c in turn.reply.calls))
        for item in await _run_calls(conv, turn.reply, turn.completion):
            yield item
        turn = await _next_turn(conv, number, final=number > policy.max_turns)
    answer = _answer(conv, turn)
    await _emit(on_lifecycle, _finished(conv, answer))
    yield XRayItem(xray=answer.xray)
    yield AnswerItem(answer=answer)


async def run_chat(
    request: ChatRequest,
    *,
    provider: Provider,
    tools: Sequence[dict[str, Any]],
    call_tool: CallTool,
    policy: LoopPolicy | None = None,
    on_attempt: OnEvent | None = None,
    on_lifecycle: OnEvent | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ChatAnswer:
    """`stream_chat` without the stream: the final answer with its X-ray.

    Raises:
        ProviderError: the provider kept failing after backoff.
    """
    stream = stream_chat(
        request,
        provider=provider,
        tools=tools,
        call_tool=call_tool,
        policy=policy,
        on_attempt=on_attempt,
        on_lifecycle=on_lifecycle,
        clock=clock,
    )
    async for item in stream:
        if isinstance(item, AnswerItem):
            return item.answer
    raise AssertionError("stream_chat always ends with an answer")  # pragma: no cover


@dataclass(frozen=True)
class _Attempt:
    """One model request that got a reply."""

    completion: Completion
    temperature: float
    latency_ms: float


async def _next_turn(conv: _Conversation, number: int, *, final: bool = False) -> _Turn:
    final = final or conv.remaining_calls() <= 0
    extra = [Message("user", FINAL_ANSWER_NOW)] if final and conv.calls_made else []
    history: list[list[ExtractionError]] = []
    retry: list[Message] = []
    for attempt in range(1, conv.policy.max_attempts + 1):
        if conv.tokens >= conv.policy.max_total_tokens:
            return _Turn(outcome="limit")
        done = await _attempt(conv, number, attempt, [*extra, *retry], final)
        reply = _judge(conv, done.completion, final)
        await _emit(conv.on_attempt, _attempted(conv, number, attempt, done, reply))
        if not reply.errors:
            return _Turn(reply, done.completion)
        history.append(reply.errors)
        retry = [Message("assistant", failed_reply_text(done.completion)), _retry_message(conv, history)]
    return _Turn(outcome="gave_up", errors=history[-1])


def _retry_message(conv: _Conversation, history: list[list[ExtractionError]]) -> Message:
    return Message("user", retry_prompt(history, conv.tools, conv.template))


async def _attempt(conv: _Conversation, turn: int, attempt: int, extra: list[Message], final: bool) -> _Attempt:
    temperature = conv.policy.temperature_for(attempt)
    tools = conv.tools if conv.native and not final else None
    conv.attempts += 1
    conv.recorder.mark(f"model attempt {attempt} of turn {turn} (temperature {temperature})")
    started = conv.recorder.clock()
    try:
        completion = await conv.provider.complete(
            conv.prompt(extra), temperature=temperature, max_tokens=conv.policy.max_completion_tokens, tools=tools
        )
    except ProviderError as exc:
        await _emit(conv.on_attempt, _provider_failed(conv, turn, attempt, temperature, exc))
        raise
    conv.tokens += completion.prompt_tokens + completion.completion_tokens
    return _Attempt(completion, temperature, round((conv.recorder.clock() - started) * 1000, 3))


def _judge(conv: _Conversation, completion: Completion, final: bool) -> ReadReply:
    """Validated calls and mistakes, with the loop's own limits applied (call budget, empty reply)."""
    reply = read_completion(completion, conv.index)
    if reply.errors:
        return reply
    allowed = 0 if final else conv.remaining_calls()
    if len(reply.calls) > allowed:
        return replace(reply, calls=[], errors=[_too_many(len(reply.calls), allowed)])
    if not reply.calls and not reply.content.strip():
        message = (
            "the reply held only reasoning: no answer and no tool call" if reply.reasoning else "the reply was empty"
        )
        return replace(reply, errors=[ExtractionError(kind="empty_reply", message=message)])
    return reply


def _too_many(made: int, allowed: int) -> ExtractionError:
    message = f"{made} tool calls in one reply, but only {allowed} more are allowed in this request"
    if allowed == 0:
        message = "no more tool calls are allowed in this request; answer from the tool results you have"
    return ExtractionError(kind="too_many_calls", message=message, suggestion=f"at most {allowed} calls")


async def _run_calls(conv: _Conversation, reply: ReadReply, completion: Completion) -> list[ChatStreamItem]:
    conv.calls_made += len(reply.calls)
    outcomes = await run_parallel(reply.calls, conv.call_tool, conv.recorder, conv.policy.preview_chars)
    conv.exchange += result_messages(completion, reply, outcomes, conv.template, conv.policy.result_chars)
    return [ToolCallItem(tool=o.record) for o in outcomes]


def _answer(conv: _Conversation, turn: _Turn) -> ChatAnswer:
    outcome: ChatOutcome = turn.outcome or "answered"
    text = turn.reply.content.strip() if turn.reply and outcome == "answered" else ""
    conv.recorder.mark(f"conversation {outcome}")
    return ChatAnswer(
        conversation_id=conv.request.conversation_id,
        answer=text,
        outcome=outcome,
        model=conv.provider.model,
        xray=conv.recorder.build(),
        attempts=conv.attempts,
        errors=turn.errors,
    )


def _attempted(conv: _Conversation, turn: int, attempt: int, done: _Attempt, reply: ReadReply) -> LLMAttempted:
    outcome = "invalid" if reply.errors else ("calls" if reply.calls else "answer")
    return LLMAttempted(
        conversation_id=conv.request.conversation_id,
        turn=turn,
        attempt=attempt,
        model=conv.provider.model,
        provider=conv.provider.name,
        temperature=done.temperature,
        prompt_tokens=done.completion.prompt_tokens,
        completion_tokens=done.completion.completion_tokens,
        outcome=outcome,
        error_kind=reply.errors[0].kind if reply.errors else None,
        errors=reply.errors[:20],
        calls=len(reply.calls),
        provider_retries=done.completion.provider_retries,
        latency_ms=done.latency_ms,
        format=reply.format,
        reasoning=_clip_reasoning(reply.reasoning),
    )


def _clip_reasoning(text: str) -> str:
    return text if len(text) <= REASONING_CHARS else text[:REASONING_CHARS] + " …[reasoning cut]"


def _provider_failed(
    conv: _Conversation, turn: int, attempt: int, temperature: float, exc: ProviderError
) -> LLMAttempted:
    return LLMAttempted(
        conversation_id=conv.request.conversation_id,
        turn=turn,
        attempt=attempt,
        model=conv.provider.model,
        provider=conv.provider.name,
        temperature=temperature,
        outcome="provider_error",
        error_kind=exc.code,
        provider_retries=exc.retries,
    )


def _started(conv: _Conversation) -> LLMConversationStarted:
    return LLMConversationStarted(
        conversation_id=conv.request.conversation_id,
        model=conv.provider.model,
        provider=conv.provider.name,
        mode="native" if conv.native else "prompt",
        tools=[str(t["name"]) for t in conv.tools],
    )


def _finished(conv: _Conversation, answer: ChatAnswer) -> LLMConversationFinished:
    return LLMConversationFinished(
        conversation_id=conv.request.conversation_id,
        outcome=answer.outcome,
        attempts=conv.attempts,
        tool_calls=conv.calls_made,
        total_ms=answer.xray.total_ms,
    )


async def _emit(callback: OnEvent | None, event: EventData) -> None:
    if callback is None:
        return
    result = callback(event)
    if inspect.isawaitable(result):
        await result
