"""Read a completion into validated calls, run them in parallel, and hand the results back as messages."""

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
from pydantic import JsonValue

from schemas.chat import ExtractedCall, ExtractionError, XRayTool
from workers.llm.extract import Extraction, extract_with_index, parse_object
from workers.llm.prompts import results_message
from workers.llm.providers.base import Completion, Message, NativeCall
from workers.llm.templates import PromptTemplate
from workers.llm.validation import ToolIndex, check_call
from workers.llm.xray import XRayRecorder, preview

CallTool = Callable[[str, dict[str, JsonValue]], Awaitable[tuple[JsonValue, str, bool]]]
"""`call_tool(name, params) -> (result_json, text, is_error)`; only validated calls ever reach it."""


@dataclass(frozen=True)
class PlannedCall:
    """A validated call and the id the provider gave it (native) or the loop made up (prompt-based)."""

    id: str
    call: ExtractedCall


@dataclass(frozen=True)
class ReadReply:
    """What one completion asked for, and what it said around that."""

    calls: list[PlannedCall] = field(default_factory=list)
    errors: list[ExtractionError] = field(default_factory=list)
    native: bool = False
    content: str = ""
    """The reply's text without its reasoning and its call markup: the answer when there is no call."""
    reasoning: str = ""
    format: str = "text"
    """`native`, or the text format the extractor recognised (see `Extraction.format`)."""


def read_completion(completion: Completion, index: ToolIndex) -> ReadReply:
    """Validated calls and mistakes in a completion: native calls if it has any, else calls in its text."""
    if completion.native_calls:
        return _read_native(completion, index)
    found: Extraction = extract_with_index(completion.text, index)
    calls = [PlannedCall(f"call_{i}", c) for i, c in enumerate(found.calls)]
    reasoning = "\n\n".join(part for part in (completion.reasoning, found.reasoning) if part)
    return ReadReply(calls, found.errors, content=found.content, reasoning=reasoning, format=found.format)


def _read_native(completion: Completion, index: ToolIndex) -> ReadReply:
    calls: list[PlannedCall] = []
    errors: list[ExtractionError] = []
    for item in completion.native_calls:
        checked = _check_native(item, index)
        if isinstance(checked, list):
            errors += checked
        else:
            calls.append(PlannedCall(item.id, checked))
    text = completion.text.strip()
    return ReadReply(calls, errors, True, text, completion.reasoning, "native")


def _check_native(item: NativeCall, index: ToolIndex) -> ExtractedCall | list[ExtractionError]:
    args = item.arguments
    if isinstance(args, str):
        try:
            args, _ = parse_object(args) if args.strip() else ({}, False)
        except ValueError as exc:
            return [ExtractionError(kind="invalid_json", message=str(exc), tool=item.name, field="params")]
    return check_call(index, item.name, args)


def failed_reply_text(completion: Completion) -> str:
    """The failed reply as text, so a retry can show the model what it wrote (native calls included)."""
    calls = [{"tool": c.name, "params": c.arguments} for c in completion.native_calls]
    rendered = "\n".join(json.dumps(c, default=str) for c in calls)
    return "\n".join(part for part in (completion.text, rendered) if part) or "(empty reply)"


@dataclass(frozen=True)
class CallOutcome:
    """One finished call: the X-ray record, the raw result, and the text the model gets back."""

    planned: PlannedCall
    record: XRayTool
    result: JsonValue
    text: str


async def run_parallel(
    planned: Sequence[PlannedCall], call_tool: CallTool, recorder: XRayRecorder, preview_chars: int
) -> list[CallOutcome]:
    """Run every call at once (anyio task group); outcomes come back in the reply's order."""
    outcomes: list[CallOutcome | None] = [None] * len(planned)

    async def run(position: int, item: PlannedCall) -> None:
        recorder.mark(f"tool {item.call.tool} started")
        started = recorder.clock()
        result, text, is_error = await call_tool(item.call.tool, dict(item.call.params))
        duration = round((recorder.clock() - started) * 1000, 3)
        record = XRayTool(
            name=item.call.tool,
            params=item.call.params,
            duration_ms=duration,
            response_preview=preview(result, text, preview_chars),
            is_error=is_error,
        )
        outcomes[position] = CallOutcome(item, record, result, text)
        recorder.mark(f"tool {item.call.tool} {'failed' if is_error else 'finished'}")

    async with anyio.create_task_group() as group:
        for position, item in enumerate(planned):
            group.start_soon(run, position, item)
    done = [o for o in outcomes if o is not None]
    for outcome in done:
        recorder.tool(outcome.record, outcome.result)
    return done


def result_messages(
    completion: Completion, reply: ReadReply, outcomes: Sequence[CallOutcome], template: PromptTemplate, limit: int
) -> list[Message]:
    """The assistant turn and the tool results, native (`tool` role) or as one user message (prompt-based)."""
    texts = [(o.planned.call.tool, _model_text(o, limit)) for o in outcomes]
    if reply.native:
        calls = tuple(NativeCall(o.planned.id, o.planned.call.tool, dict(o.planned.call.params)) for o in outcomes)
        tool_messages = [
            Message("tool", text, tool_call_id=o.planned.id) for o, (_, text) in zip(outcomes, texts, strict=True)
        ]
        return [Message("assistant", completion.text, tool_calls=calls), *tool_messages]
    return [Message("assistant", completion.text), Message("user", results_message(template, texts))]


def _model_text(outcome: CallOutcome, limit: int) -> str:
    body = outcome.text or json.dumps(outcome.result, default=str)
    if not body or body in ("null", "[]", "{}"):
        body = "(the tool returned no data)"
    body = body if len(body) <= limit else body[:limit] + " …[truncated]"
    return ("ERROR: " + body) if outcome.record.is_error else body
