"""`geogate llm parse`: run the extractor over JSON lines, for people debugging a model's output.

A pure function of its input: one JSON line out for every line in (blank and broken lines included, so
the output lines up with the input), nothing read but the line itself.
"""

import json
from typing import Any, TextIO

from workers.llm.extract import extract_calls


def parse_line(line: str) -> dict[str, Any]:
    """One input line `{"text", "tools"}` → `{"format", "calls", "errors", "content", "reasoning"}`.

    `format` is the call format the reply's markers revealed (`hermes`, `qwen3_xml`, `harmony`, …, `json`,
    or `text` when it holds no call); `errors` are what the loop would feed back to the model. A call
    carries `aliases` / `repaired` only when they apply. A line that is not such an object yields one
    error of kind `invalid_input` and format `none`.
    """
    try:
        item = json.loads(line)
        if not isinstance(item, dict):
            raise TypeError("each line must be a JSON object")
        text, tools = item["text"], item.get("tools") or []
        if not isinstance(text, str) or not isinstance(tools, list):
            raise TypeError("text must be a string and tools a list")
    except (ValueError, KeyError, TypeError) as exc:
        error = {"kind": "invalid_input", "message": f"{type(exc).__name__}: {exc}"}
        return {"format": "none", "calls": [], "errors": [error], "content": "", "reasoning": ""}
    found = extract_calls(text, tools)
    return {
        "format": found.format,
        "calls": [c.model_dump(mode="json", exclude_defaults=True) | {"params": c.params} for c in found.calls],
        "errors": [e.model_dump(mode="json", exclude_none=True) for e in found.errors],
        "content": found.content,
        "reasoning": found.reasoning,
    }


def parse_lines(in_stream: TextIO, out_stream: TextIO) -> int:
    """Read JSON lines from `in_stream`, write one JSON line per input line to `out_stream`.

    Returns:
        The exit status: 0 when every line parsed without errors, 1 when any line had errors.
    """
    status = 0
    for line in in_stream:
        result = parse_line(line)
        status |= 1 if result["errors"] else 0
        out_stream.write(json.dumps(result, ensure_ascii=False) + "\n")
        out_stream.flush()
    return status
