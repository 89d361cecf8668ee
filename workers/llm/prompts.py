"""The prompts the loop sends: system rules that confine answers to tool data, tool listings, tool results."""

import json
from collections.abc import Sequence
from typing import Any

from workers.llm.templates import TEMPLATES, PromptTemplate

SYSTEM_RULES = """You are Geogate's geospatial assistant. You answer questions by calling the tools available to you.

RULES:
- Use ONLY information from tool results. Do not use prior knowledge about files, datasets, places, \
coordinates or numbers.
- If the tools return no data, or only errors, say clearly that the tools returned nothing for this \
question. Do not guess and do not fill the gap from memory.
- Name the sources the tool results give (files, URIs, datasets) when you use them."""

FINAL_ANSWER_NOW = (
    "The tool-call budget for this request is spent. Answer now, using only the tool results above, "
    "without calling any tool. If they hold nothing useful, say so."
)


def template_for(name: str) -> PromptTemplate:
    """The prompt template called `name`, or the generic one."""
    return TEMPLATES.get(name, TEMPLATES["generic"])


def system_prompt(tools: Sequence[dict[str, Any]], template: PromptTemplate, *, native: bool) -> str:
    """The system message: the rules, plus the tools and the call format when calls are prompt-based."""
    if native or not tools:
        return SYSTEM_RULES
    return "\n\n".join([SYSTEM_RULES, template.tools_intro, render_tools(tools, template), template.call_format])


def render_tools(tools: Sequence[dict[str, Any]], template: PromptTemplate) -> str:
    """One line per tool, in the template's shape, with its inputSchema as compact JSON."""
    return "\n".join(
        template.tool_line.format(
            name=tool["name"],
            description=" ".join(str(tool.get("description", "")).split()),
            schema=json.dumps(tool.get("inputSchema") or {}, separators=(",", ":")),
        )
        for tool in tools
    )


def results_message(template: PromptTemplate, results: Sequence[tuple[str, str]]) -> str:
    """Tool results for a prompt-based model, as one user message (non-tool chat templates cannot render `tool`)."""
    blocks = [f"[{i}] {name}:\n{text}" for i, (name, text) in enumerate(results, start=1)]
    return "\n\n".join([template.results_intro, *blocks])
