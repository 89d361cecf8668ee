"""Find balanced JSON objects anywhere in text: fenced or not, nested, with braces inside strings."""

import re
from dataclasses import dataclass

_VALUE_START = frozenset("{[,:")
_TOOLISH = re.compile(r"""["']?(tool|tool_calls|name|function|params|parameters|arguments)["']?\s*:""")


@dataclass(frozen=True)
class Span:
    """A region of the text that opens with `{`; `closed` is False when the text ends inside it."""

    start: int
    end: int
    closed: bool

    def of(self, text: str) -> str:
        """The span's characters."""
        return text[self.start : self.end]


def looks_like_call(fragment: str) -> bool:
    """True when a fragment has a key a tool call would have (used to tell a broken call from prose braces)."""
    return _TOOLISH.search(fragment) is not None


def scan_objects(text: str) -> list[Span]:
    """Every top-level `{…}` object in `text`, in order.

    Strings (double-quoted, and single-quoted where a value may start) are skipped, so braces inside
    them do not count. Objects nested in an object are part of it, not separate spans. An unclosed
    object whose head looks like a tool call ends the scan (truncated output: nothing inside it is
    trusted); an unclosed prose brace (`a set {1, 2`) is skipped and the scan goes on.
    """
    spans: list[Span] = []
    pos = text.find("{")
    while pos != -1:
        end = match_object(text, pos)
        if end is not None:
            spans.append(Span(pos, end, closed=True))
            pos = text.find("{", end)
        elif looks_like_call(_head(text, pos)):
            spans.append(Span(pos, len(text), closed=False))
            break
        else:
            pos = text.find("{", pos + 1)
    return spans


def _head(text: str, pos: int) -> str:
    """The object's text up to its first nested `{` (its own keys, not its children's)."""
    nested = text.find("{", pos + 1)
    return text[pos : nested if nested != -1 else len(text)]


def match_object(text: str, start: int) -> int | None:
    """Index just past the `}` that closes the `{` at `start`, or None if the text ends first."""
    depth, i, n, prev = 0, start, len(text), "{"
    while i < n:
        ch = text[i]
        if ch == '"' or (ch == "'" and prev in _VALUE_START):
            i = _skip_string(text, i, ch)
            if i < 0:
                return None
            prev = ch
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        if not ch.isspace():
            prev = ch
        i += 1
    return None


def _skip_string(text: str, i: int, quote: str) -> int:
    """Index just past the string opening at `i`, or -1 if it never closes."""
    j = i + 1
    while True:
        k = text.find(quote, j)
        if k < 0:
            return -1
        backslashes = 0
        while text[k - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return k + 1
        j = k + 1
