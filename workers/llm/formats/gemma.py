"""Gemma 4 `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,flag:true,obj:{k:<|"|>v<|"|>},xs:[1,2]}<tool_call|>`,
and FunctionGemma's `<start_function_call>call:NAME{key:<escape>text<escape>}<end_function_call>`.

Keys are bare; strings sit between two quote tokens, with no escaping (so braces, commas and end markers
inside them are text); numbers, booleans, null, lists and objects are written bare. The block is read to
the brace that closes the arguments; a bare value that is not a number, boolean or null is kept as text.
Gemma 4's reasoning channel (`<|channel>thought…<channel|>`) is split off before this parser runs.
"""

import json
import re

from pydantic import JsonValue

from workers.llm.formats.base import (
    NAME,
    Block,
    Parsed,
    RawCall,
    cut_at,
    malformed,
    scan_blocks,
    skip_marker,
    truncated,
)

START = re.compile(r"<\|tool_call>|<start_function_call>")
_DIALECTS = {"<|tool_call>": ('<|"|>', "<tool_call|>"), "<start_function_call>": ("<escape>", "<end_function_call>")}
_HEAD = re.compile(rf"\s*call\s*:\s*({NAME}?)\s*(?=\{{)")
_BARE_END = re.compile(r"[,}\]]")
_MAX_DEPTH = 64


class _Cut(Exception):
    """The text ended inside the call."""


class _Bad(ValueError):
    """The call does not follow the grammar."""


def parse(text: str) -> Parsed:
    """Every Gemma tool-call block in `text`."""
    return scan_blocks(text, START, _block, "gemma")


def _block(text: str, match: re.Match[str]) -> Block:
    quote, end_marker = _DIALECTS[match[0]]
    head = _HEAD.match(text, match.end())
    if head is None:
        if cut_at(text, match.end(), "call:") or _HEAD.match(text + "{", match.end()):
            return Block(len(text), errors=[truncated("Gemma")])
        return Block(match.end(), errors=[malformed("a Gemma tool call must read call:NAME{…}")])
    name = head[1]
    reader = _Reader(text, head.end(), quote)
    try:
        args = reader.value(0)
    except _Cut:
        return Block(len(text), errors=[truncated("Gemma", name)])
    except _Bad as exc:
        close = text.find(end_marker, head.end())
        resume = close + len(end_marker) if close != -1 else len(text)
        return Block(resume, errors=[malformed(f"Gemma: the arguments of {name!r} do not parse: {exc}", name)])
    textual = frozenset(reader.bare_keys)
    return Block(skip_marker(text, reader.pos, end_marker), [RawCall(name, args, textual)])


class _Reader:
    """A recursive-descent reader of Gemma's argument grammar from `pos`."""

    def __init__(self, text: str, pos: int, quote: str) -> None:
        self.text, self.pos, self.quote = text, pos, quote
        self.bare_keys: set[str] = set()
        """Top-level keys whose value was a bare word that is not JSON (typed later by the schema)."""

    def value(self, depth: int) -> JsonValue:
        if depth > _MAX_DEPTH:
            raise _Bad("nested too deeply")
        self._ws()
        if self.text.startswith(self.quote, self.pos):
            return self._quoted()
        if self.text.startswith('"', self.pos):
            return self._json_string()
        if self.text.startswith("{", self.pos):
            return self._object(depth)
        if self.text.startswith("[", self.pos):
            return self._array(depth)
        return self._bare()[0]

    def _object(self, depth: int) -> dict[str, JsonValue]:
        self.pos += 1
        out: dict[str, JsonValue] = {}
        while not self._closes("}"):
            key = self._key()
            if self.text.startswith((self.quote, '"', "{", "["), self._skip()):
                out[key] = self.value(depth + 1)
            else:
                out[key], bare = self._bare()
                if bare and depth == 0:
                    self.bare_keys.add(key)
            self._separator("}")
        return out

    def _array(self, depth: int) -> list[JsonValue]:
        self.pos += 1
        out: list[JsonValue] = []
        while not self._closes("]"):
            out.append(self.value(depth + 1))
            self._separator("]")
        return out

    def _key(self) -> str:
        self._ws()
        if self.text.startswith(self.quote, self.pos):
            key = self._quoted()
        elif self.text.startswith('"', self.pos):
            key = self._json_string()
        else:
            colon = self._find(":")
            key, self.pos = self.text[self.pos : colon].strip(), colon
        self._ws()
        if not self.text.startswith(":", self.pos):
            self._need(":")
        self.pos += 1
        return key

    def _quoted(self) -> str:
        start = self.pos + len(self.quote)
        end = self._find(self.quote, start)
        self.pos = end + len(self.quote)
        return self.text[start:end]

    def _json_string(self) -> str:
        try:
            value, self.pos = json.JSONDecoder().raw_decode(self.text, self.pos)
        except ValueError as exc:
            if '"' not in self.text[self.pos + 1 :]:
                raise _Cut from exc
            raise _Bad(f"bad string at {self.pos}") from exc
        return str(value)

    def _bare(self) -> tuple[JsonValue, bool]:
        """A bare scalar and whether it was kept as text (not a number, boolean or null)."""
        self._ws()
        stop = _BARE_END.search(self.text, self.pos)
        if stop is None:
            raise _Cut
        raw, self.pos = self.text[self.pos : stop.start()].strip(), stop.start()
        try:
            return json.loads(raw), False
        except ValueError:
            if not raw:
                raise _Bad("a value is missing") from None
            return raw, True

    def _closes(self, bracket: str) -> bool:
        self._ws()
        if self.pos >= len(self.text):
            raise _Cut
        if self.text.startswith(bracket, self.pos):
            self.pos += 1
            return True
        return False

    def _separator(self, bracket: str) -> None:
        self._ws()
        if self.text.startswith(",", self.pos):
            self.pos += 1
        elif not self.text.startswith(bracket, self.pos):
            self._need(f"',' or '{bracket}'")

    def _need(self, what: str) -> None:
        if self.pos >= len(self.text) or cut_at(self.text, self.pos, self.quote):
            raise _Cut
        raise _Bad(f"expected {what} at {self.text[self.pos : self.pos + 20]!r}")

    def _find(self, needle: str, start: int | None = None) -> int:
        at = self.text.find(needle, self.pos if start is None else start)
        if at == -1:
            raise _Cut
        return at

    def _skip(self) -> int:
        self._ws()
        return self.pos

    def _ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
