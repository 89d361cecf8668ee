"""The workflow meta-language: `${var}`, `${var[0]}`, `${var.field}`, `${foreach x in xs} … ${/foreach}`, on Jinja2.

Jinja2's `SandboxedEnvironment` compiles and renders; this module keeps the seed's syntax in front of it. Each `${…}`
tag is checked against the seed's grammar (a name with `.field` and `[index]` accessors, or a foreach tag) and
written out as Jinja source with the delimiters `${ }` (print), `${% %}` (block) and `${# #}` (comment): outside
tags the seed's text can hold no `${`, so none of them can appear in it by accident. `$${` writes a literal `${`.
A block tag (`${foreach …}`, `${/foreach}`) alone on its line takes its line with it, so YAML block scalars render
without stray blank lines. Variables are renamed `v_<name>` in the Jinja source, so no seed name meets a Jinja
keyword, constant or global (`loop`, `none`, `in`, `range`); lookups read JSON only (a field is a dict key, an
index a list item, never a Python attribute).

Cost against the hand-written engine this replaced (`python bench/workflow_template.py`, same run, the bundled
definitions, 2 shared cores at load 4 to 10): rendering 4 to 7× slower (3 → 12 to 21 µs a template; a step renders
one instruction and a few arguments), parsing 135 to 250× slower (25 µs → 6 ms a template, once per process:
definitions are loaded once and cached). Neither is a reason to keep 342 hand-written lines beside a step that goes
through Celery and appends to the event log.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jinja2
from jinja2 import StrictUndefined, Undefined
from jinja2.sandbox import SandboxedEnvironment
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

    def jinja(self) -> str:
        """The path as a Jinja expression over the renamed variables: `v_analysis["items"][0]`."""
        return f"v_{self.root}" + "".join(f"[{a}]" if isinstance(a, int) else f'["{a}"]' for a in self.accessors)


_NAME = "[A-Za-z_][A-Za-z0-9_]*"
_PATH = re.compile(rf"{_NAME}(?:\.{_NAME}|\[-?\d+\])*")
_ACCESSOR = re.compile(rf"\.({_NAME})|\[(-?\d+)\]")
_TAG = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
"""`$${` (a literal), a whole tag with its body, or a `${` that is never closed."""


def parse_path(text: str) -> Path:
    """Parse `name`, `name[0]`, `name.field` and their combinations.

    Raises:
        TemplateSyntaxError: `text` is not a path.
    """
    text = text.strip()
    if not _PATH.fullmatch(text):
        raise TemplateSyntaxError(f"expected NAME, NAME.field or NAME[integer] in expression {text!r}")
    root = re.match(_NAME, text)
    assert root is not None
    accessors = [int(m[2]) if m[2] else m[1] for m in _ACCESSOR.finditer(text, root.end())]
    return Path(root[0], tuple(accessors))


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


class _Absent(StrictUndefined):
    """An index or field the value does not have: strict rendering raises on it, lenient rendering writes nothing."""

    __slots__ = ("accessor",)

    def __init__(self, accessor: Accessor) -> None:
        super().__init__(name=str(accessor))
        self.accessor = accessor


class _JsonSandbox(SandboxedEnvironment):
    """Reads JSON only: `.field` and `["field"]` are dict keys, `[i]` list items; never a Python attribute."""

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Undefined):
            return obj  # the first miss travels to the output, which reports it with its position
        if isinstance(argument, int) and isinstance(obj, list) and -len(obj) <= argument < len(obj):
            return obj[argument]
        if isinstance(argument, str) and isinstance(obj, dict) and argument in obj:
            return obj[argument]
        return _Absent(argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self.getitem(obj, attribute)


def _absent(value: Undefined, missing: Missing, line: int, column: int, path: str) -> None:
    """Raise for a value the context lacks, unless it is a missing index or field and `missing` is "empty"."""
    if not isinstance(value, _Absent):
        raise UndefinedVariable(parse_path(path).root, line, column)
    if missing == "error":
        raise MissingValue(f"{path} has no {value.accessor!r}", line, column)


def _output(value: Any, missing: Missing, line: int, column: int, path: str) -> str:
    if isinstance(value, Undefined):
        _absent(value, missing, line, column, path)
        return ""
    return format_value(value)


def _items(value: Any, missing: Missing, line: int, column: int, path: str) -> list[JsonValue]:
    if isinstance(value, Undefined):
        _absent(value, missing, line, column, path)
        return []
    if isinstance(value, list):
        return value
    if missing == "error":
        raise MissingValue(f"{path} is not a list", line, column)
    return [] if value is None else [value]


_ENV = _JsonSandbox(
    block_start_string="${%",
    block_end_string="%}",
    variable_start_string="${",
    variable_end_string="}",
    comment_start_string="${#",
    comment_end_string="#}",
    undefined=StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
)
_ENV.filters = {"output": _output, "items": _items}
_ENV.tests, _ENV.globals = {}, {}
_LITERAL = "${% raw %}${${% endraw %}"
_CR = '${ "\\r" }'
"""Jinja turns every line break in template text into "\\n"; a carriage return is written as an expression instead."""


def _position(source: str, offset: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, offset - line_start + 1


def _standalone(source: str, start: int, end: int) -> tuple[int, int] | None:
    """The line span to drop when a block tag is alone on its line, else None."""
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", end)
    line_end = len(source) if line_end == -1 else line_end + 1
    if source[line_start:start].strip() or source[end:line_end].strip():
        return None
    return line_start, line_end


def _tag(body: str, where: tuple[int, int], opened: list[tuple[tuple[int, int], str]], free: set[str]) -> str:
    """The Jinja source for one tag; `opened` holds the foreach tags still open (position, loop variable) and
    `free` gathers the variables read from the context."""
    words = body.split()
    bound = {var for _, var in opened}
    if words == ["/foreach"]:
        if not opened:
            raise TemplateSyntaxError("'${/foreach}' without '${foreach}'", *where)
        opened.pop()
        return "${% endfor %}"
    try:
        if words[:1] == ["foreach"]:
            if len(words) != 4 or words[2] != "in":
                raise TemplateSyntaxError("expected '${foreach NAME in PATH}'")
            var, path = parse_path(words[1]), parse_path(words[3])
            if var.accessors:
                raise TemplateSyntaxError(f"loop variable {words[1]!r} must be a plain name")
            free.update({path.root} - bound)
            opened.append((where, var.root))
            return f'${{% for v_{var.root} in ({path.jinja()}) | items(_missing, {where[0]}, {where[1]}, "{path}") %}}'
        path = parse_path(body)
    except TemplateSyntaxError as exc:
        raise TemplateSyntaxError(str(exc), *where) from exc
    free.update({path.root} - bound)
    return f'${{ ({path.jinja()}) | output(_missing, {where[0]}, {where[1]}, "{path}") }}'


def translate(source: str) -> tuple[str, frozenset[str]]:
    """The Jinja source of a template in the seed's syntax, and the variables it reads from its context.

    Raises:
        TemplateSyntaxError: with the line and column of the problem.
    """
    out: list[str] = []
    opened: list[tuple[tuple[int, int], str]] = []
    free: set[str] = set()
    i = 0
    for match in _TAG.finditer(source):
        start, end = match.span()
        if match[0] == "$${":
            out += [source[i:start].replace("\r", _CR), _LITERAL]
            i = end
            continue
        where = _position(source, start)
        if match[1] is None:
            raise TemplateSyntaxError("unclosed '${'", *where)
        jinja = _tag(match[1], where, opened, free)
        span = _standalone(source, start, end) if jinja.startswith("${%") else None
        out += [source[i : span[0] if span else start].replace("\r", _CR), jinja]
        i = span[1] if span else end
    if opened:
        raise TemplateSyntaxError("'${foreach}' is never closed", *opened[-1][0])
    out.append(source[i:].replace("\r", _CR))
    return "".join(out), frozenset(free)


@dataclass(frozen=True)
class Template:
    """A parsed template. Build it with `parse()`; render it as often as needed."""

    source: str
    compiled: jinja2.Template = field(compare=False, repr=False)
    free: frozenset[str] = field(compare=False, repr=False)

    def names(self) -> set[str]:
        """The variables the template reads from its context (loop variables excluded)."""
        return set(self.free)

    def render(self, context: Mapping[str, JsonValue], *, missing: Missing = "error") -> str:
        """Render with `context`.

        Args:
            context: variable name → value.
            missing: "error" raises on a missing index or field; "empty" renders it as nothing.

        Raises:
            UndefinedVariable: a variable is not in `context` (whatever `missing` says).
            MissingValue: an index or field does not exist and `missing` is "error".
        """
        return self.compiled.render({"_missing": missing, **{f"v_{k}": v for k, v in context.items()}})


def parse(source: str) -> Template:
    """Parse a template.

    Raises:
        TemplateSyntaxError: with the line and column of the problem.
    """
    jinja, free = translate(source)
    return Template(source, _ENV.from_string(jinja), free)


def render(source: str, context: Mapping[str, JsonValue], *, missing: Missing = "error") -> str:
    """Parse and render in one go (see `Template.render`)."""
    return parse(source).render(context, missing=missing)
