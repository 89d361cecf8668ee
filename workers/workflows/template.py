"""The workflow meta-language: `${var}`, `${var[0]}`, `${var.field}`, `${foreach x in xs} … ${/foreach}`.

A small lexer and a recursive parser build a tree once, at load time; rendering walks the tree. `$${` writes a
literal `${`. A block tag (`${foreach …}`, `${/foreach}`) alone on its line takes its line with it, so YAML
block scalars render without stray blank lines.
"""

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

Accessor = str | int
"""A `.field` (str) or an `[index]` (int) after the variable's name."""
Missing = Literal["error", "empty"]


class TemplateError(ValueError):
    """Base of template errors: a stable `code`, and where in the template (1-based line and column)."""

    code = "template.error"

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        where = f" (line {line}, column {column})" if line else ""
        super().__init__(f"{message}{where}")
        self.line, self.column = line, column


class TemplateSyntaxError(TemplateError):
    """The template cannot be parsed (unclosed `${`, unbalanced foreach, bad expression)."""

    code = "template.syntax"


class UndefinedVariable(TemplateError):
    """A variable the template names is not in the context."""

    code = "template.undefined"

    def __init__(self, name: str, line: int = 0, column: int = 0) -> None:
        super().__init__(f"undefined variable {name!r}", line, column)
        self.name = name


class MissingValue(TemplateError):
    """A variable exists but the index or field asked for does not (strict rendering only)."""

    code = "template.missing"


@dataclass(frozen=True)
class Path:
    """`root` followed by accessors: `analysis.items[0]` is Path("analysis", ("items", 0))."""

    root: str
    accessors: tuple[Accessor, ...] = ()

    def __str__(self) -> str:
        return self.root + "".join(f"[{a}]" if isinstance(a, int) else f".{a}" for a in self.accessors)


@dataclass(frozen=True)
class Text:
    """Literal text."""

    text: str


@dataclass(frozen=True)
class Var:
    """`${path}`: a value written into the text; `offset` locates it for error messages."""

    path: Path
    offset: int


@dataclass(frozen=True)
class ForEach:
    """`${foreach var in path}` … `${/foreach}`: `body` rendered once per item with `var` bound."""

    var: str
    path: Path
    body: tuple["Node", ...]
    offset: int


Node = Text | Var | ForEach


@dataclass(frozen=True)
class _Open:
    var: str
    path: Path
    offset: int


@dataclass(frozen=True)
class _Close:
    offset: int


_Token = Text | Var | _Open | _Close


def _position(source: str, offset: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, offset - line_start + 1


def _is_name_start(ch: str) -> bool:
    return ch.isascii() and (ch.isalpha() or ch == "_")


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


class _PathScanner:
    """Reads `name ( .name | [int] )*` character by character."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def fail(self, what: str) -> TemplateSyntaxError:
        return TemplateSyntaxError(f"{what} in expression {self.text!r} at character {self.i + 1}")

    def name(self) -> str:
        start = self.i
        if self.i >= len(self.text) or not _is_name_start(self.text[self.i]):
            raise self.fail("expected a name")
        while self.i < len(self.text) and _is_name_char(self.text[self.i]):
            self.i += 1
        return self.text[start : self.i]

    def index(self) -> int:
        start = self.i
        if self.text.startswith("-", self.i):
            self.i += 1
        while self.i < len(self.text) and self.text[self.i].isdigit():
            self.i += 1
        digits = self.text[start : self.i]
        if digits in ("", "-") or not self.text.startswith("]", self.i):
            raise self.fail("expected an integer index and ']'")
        self.i += 1
        return int(digits)

    def path(self) -> Path:
        root, accessors = self.name(), list[Accessor]()
        while self.i < len(self.text):
            ch, self.i = self.text[self.i], self.i + 1
            if ch == ".":
                accessors.append(self.name())
            elif ch == "[":
                accessors.append(self.index())
            else:
                self.i -= 1
                raise self.fail(f"unexpected {ch!r}")
        return Path(root, tuple(accessors))


def parse_path(text: str) -> Path:
    """Parse `name`, `name[0]`, `name.field` and their combinations.

    Raises:
        TemplateSyntaxError: `text` is not a path.
    """
    return _PathScanner(text.strip()).path()


def _tag_token(body: str, offset: int) -> _Token:
    words = body.split()
    if words[:1] == ["/foreach"] and len(words) == 1:
        return _Close(offset)
    if words[:1] == ["foreach"]:
        if len(words) != 4 or words[2] != "in":
            raise TemplateSyntaxError("expected '${foreach NAME in PATH}'")
        var = parse_path(words[1])
        if var.accessors:
            raise TemplateSyntaxError(f"loop variable {words[1]!r} must be a plain name")
        return _Open(var.root, parse_path(words[3]), offset)
    return Var(parse_path(body), offset)


def _standalone(source: str, start: int, end: int) -> tuple[int, int] | None:
    """The line span to drop when a block tag is alone on its line, else None."""
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", end)
    line_end = len(source) if line_end == -1 else line_end + 1
    if source[line_start:start].strip() or source[end:line_end].strip():
        return None
    return line_start, line_end


def _lex(source: str) -> Iterator[_Token]:
    text, i = [], 0
    while (dollar := source.find("$", i)) != -1:
        if source.startswith("$${", dollar):
            text.append(source[i:dollar] + "${")
            i = dollar + 3
            continue
        if not source.startswith("${", dollar):
            text.append(source[i : dollar + 1])
            i = dollar + 1
            continue
        close = source.find("}", dollar)
        if close == -1:
            raise TemplateSyntaxError("unclosed '${'", *_position(source, dollar))
        try:
            token = _tag_token(source[dollar + 2 : close], dollar)
        except TemplateSyntaxError as exc:
            raise TemplateSyntaxError(str(exc), *_position(source, dollar)) from exc
        span = _standalone(source, dollar, close + 1) if isinstance(token, _Open | _Close) else None
        text.append(source[i : span[0] if span else dollar])
        if joined := "".join(text):
            yield Text(joined)
        text, i = [], span[1] if span else close + 1
        yield token
    if joined := "".join([*text, source[i:]]):
        yield Text(joined)


def _build(source: str, tokens: Iterator[_Token]) -> tuple[Node, ...]:
    stack: list[tuple[_Open | None, list[Node]]] = [(None, [])]
    for token in tokens:
        if isinstance(token, _Open):
            stack.append((token, []))
        elif isinstance(token, _Close):
            if len(stack) == 1:
                raise TemplateSyntaxError("'${/foreach}' without '${foreach}'", *_position(source, token.offset))
            opened, body = stack.pop()
            assert opened is not None
            stack[-1][1].append(ForEach(opened.var, opened.path, tuple(body), opened.offset))
        else:
            stack[-1][1].append(token)
    unclosed = stack[-1][0]
    if unclosed is not None:
        raise TemplateSyntaxError("'${foreach}' is never closed", *_position(source, unclosed.offset))
    return tuple(stack[0][1])


def format_value(value: JsonValue) -> str:
    """How a value reads inside an instruction: lists as bullet lines, objects as JSON, None as nothing."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "\n".join(f"- {format_value(item)}" for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _access(value: JsonValue, accessor: Accessor) -> tuple[bool, JsonValue]:
    if isinstance(accessor, int) and isinstance(value, list) and -len(value) <= accessor < len(value):
        return True, value[accessor]
    if isinstance(accessor, str) and isinstance(value, dict) and accessor in value:
        return True, value[accessor]
    return False, None


@dataclass(frozen=True)
class Template:
    """A parsed template. Build it with `parse()`; render it as often as needed."""

    source: str
    nodes: tuple[Node, ...]

    def names(self) -> set[str]:
        """The variables the template reads from its context (loop variables excluded)."""
        return _free_names(self.nodes, frozenset())

    def render(self, context: Mapping[str, JsonValue], *, missing: Missing = "error") -> str:
        """Render with `context`.

        Args:
            context: variable name → value.
            missing: "error" raises on a missing index or field; "empty" renders it as nothing.

        Raises:
            UndefinedVariable: a variable is not in `context` (whatever `missing` says).
            MissingValue: an index or field does not exist and `missing` is "error".
        """
        out: list[str] = []
        self._render(self.nodes, dict(context), missing, out)
        return "".join(out)

    def _render(self, nodes: tuple[Node, ...], scope: dict[str, JsonValue], missing: Missing, out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, Text):
                out.append(node.text)
            elif isinstance(node, Var):
                out.append(format_value(self._resolve(node.path, node.offset, scope, missing)))
            else:
                for item in self._items(node, scope, missing):
                    self._render(node.body, {**scope, node.var: item}, missing, out)

    def _items(self, node: ForEach, scope: dict[str, JsonValue], missing: Missing) -> list[JsonValue]:
        value = self._resolve(node.path, node.offset, scope, missing)
        if isinstance(value, list):
            return value
        if missing == "error":
            raise MissingValue(f"{node.path} is not a list", *_position(self.source, node.offset))
        return [] if value is None else [value]

    def _resolve(self, path: Path, offset: int, scope: dict[str, JsonValue], missing: Missing) -> JsonValue:
        if path.root not in scope:
            raise UndefinedVariable(path.root, *_position(self.source, offset))
        value = scope[path.root]
        for accessor in path.accessors:
            found, value = _access(value, accessor)
            if not found and missing == "error":
                raise MissingValue(f"{path} has no {accessor!r}", *_position(self.source, offset))
            if not found:
                return None
        return value


def _free_names(nodes: tuple[Node, ...], bound: frozenset[str]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, Var | ForEach) and node.path.root not in bound:
            names.add(node.path.root)
        if isinstance(node, ForEach):
            names |= _free_names(node.body, bound | {node.var})
    return names


def parse(source: str) -> Template:
    """Parse a template.

    Raises:
        TemplateSyntaxError: with the line and column of the problem.
    """
    return Template(source, _build(source, _lex(source)))


def render(source: str, context: Mapping[str, JsonValue], *, missing: Missing = "error") -> str:
    """Parse and render in one go (see `Template.render`)."""
    return parse(source).render(context, missing=missing)
