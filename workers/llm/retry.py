"""Retry context (docs/llm-host.md): every previous error in order, guidance per error kind, the tool schema again."""

from collections.abc import Sequence
from typing import Any

from schemas.chat import ErrorKind, ExtractionError
from workers.llm.prompts import render_tools
from workers.llm.templates import PromptTemplate

GUIDANCE: dict[ErrorKind, str] = {
    "invalid_json": "Write the call as strict JSON: double quotes around keys and strings, commas between "
    "fields, every brace closed.",
    "invalid_markup": "Write the tool call exactly in the format shown below: every tag opened and closed, "
    "nothing but the call inside it.",
    "truncated": "Your reply was cut off inside a tool call. Write the complete call first, with nothing before it.",
    "unknown_tool": "Use only the tool names listed below, spelled exactly.",
    "blocked_tool": "That tool is not allowed here. Use another tool, or answer without it.",
    "invalid_arguments": 'Put the arguments in a JSON object: "params": {"name": value}.',
    "missing_param": "Include every required parameter.",
    "unknown_param": "Use only the parameter names in the tool's schema.",
    "wrong_type": "Give every parameter the JSON type its schema says (a number is not a string).",
    "invalid_value": "Use one of the values the schema allows.",
    "invalid_params": "Make the parameters satisfy the tool's schema below.",
    "too_many_calls": "Make fewer tool calls: only the ones you need for this question.",
    "empty_reply": "Reply with a tool call or with your answer; your reply was empty.",
}
"""What to tell the model for each kind of mistake."""


def describe(error: ExtractionError) -> str:
    """One line for the model: what was wrong, where, and what would fit."""
    where = f" (tool {error.tool!r}" + (f", field {error.field!r})" if error.field else ")") if error.tool else ""
    hint = f" Suggestion: {error.suggestion}" if error.suggestion else ""
    return f"{error.kind}: {error.message}{where}.{hint}"


def retry_prompt(
    history: Sequence[Sequence[ExtractionError]], tools: Sequence[dict[str, Any]], template: PromptTemplate
) -> str:
    """The user message that asks for a corrected reply after failed attempts.

    Args:
        history: The errors of each failed attempt so far, oldest first.
        tools: The tools on offer; the ones the errors name are shown again (all of them if none is named).
        template: The model's prompt template, for the tool listing and the call format.
    """
    lines = ["IMPORTANT: Previous attempts failed with these errors:"]
    for number, errors in enumerate(history, start=1):
        lines += [f"Attempt {number}: {describe(e)}" for e in errors]
    kinds = list(dict.fromkeys(e.kind for errors in history for e in errors))
    lines += ["", "How to fix them:", *(f"- {GUIDANCE[k]}" for k in kinds)]
    lines += ["", "Please correct these issues. Available tools:", render_tools(_relevant(history, tools), template)]
    lines += ["", template.call_format]
    return "\n".join(lines)


def _relevant(history: Sequence[Sequence[ExtractionError]], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    named = {e.tool for errors in history for e in errors} | {e.suggestion for errors in history for e in errors}
    chosen = [tool for tool in tools if tool["name"] in named]
    return chosen or list(tools)
