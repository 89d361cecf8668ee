"""Helpers of the format tests: run the extractor on the labelled samples' tools."""

from typing import Any

from tests.unit.workers.llm.corpus import TOOLS
from workers.llm import Extraction, extract_calls


def extract(text: str) -> Extraction:
    """The extractor on `text`, with the sample tools."""
    return extract_calls(text, TOOLS)


def calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The calls in `text`, which must have no error."""
    found = extract(text)
    assert found.errors == [], found.errors
    return [(c.tool, c.params) for c in found.calls]


def kinds(text: str) -> list[str]:
    """The error kinds of `text`, which must yield no call."""
    found = extract(text)
    assert found.calls == [], found.calls
    return [e.kind for e in found.errors]
