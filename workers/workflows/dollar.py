"""The `${…}` template syntax of older workflow files, converted to Jinja2 once, when the file is loaded.

`${var}`, `${var[0]}`, `${var.field}` (a name with `.field` and `[index]` accessors), `${foreach x in xs} …
${/foreach}`; `$${` writes a literal `${`. Each tag is checked against that grammar and written out as a Jinja tag;
the text between tags is written so that Jinja reads none of it as markup. A block tag alone on its line takes its
line with it. Variables become `v_<name>` in the Jinja source, so no name meets a Jinja keyword or literal (`in`,
`none`, `loop`); the `Template` puts the prefix on the context's names. The two filters the tags call carry the
tag's line and column, so a render error points into the `${…}` text as written. Looping over a value that is not a
list is an error when rendering strictly, and loops once over it when rendering leniently.
"""

import re
from dataclasses import dataclass
from typing import Any

from jinja2 import Undefined
from pydantic import JsonValue

from workers.workflows.template import (
    ENV,
    Accessor,
    MissingValue,
    Template,
    TemplateSyntaxError,
    compile_source,
    missing,
    strict,
)

PREFIX = "v_"
_NAME = "[A-Za-z_][A-Za-z0-9_]*"
_PATH = re.compile(rf"{_NAME}(?:\.{_NAME}|\[-?\d+\])*")
_ACCESSOR = re.compile(rf"\.({_NAME})|\[(-?\d+)\]")
_TAG = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
"""`$${` (a literal), a whole tag with its body, or a `${` that is never closed."""
_TEXT = re.compile(r"[{\r]")
_QUOTED = {"{": '{{ "{" }}', "\r": '{{ "\\r" }}'}
"""Text characters written as expressions: a `{` could open Jinja markup, and Jinja writes every line break in text
as "\\n"."""
_USED = re.compile(r"\$\{|\{[{%#]")


@dataclass(frozen=True)
class Path:
    """`root` followed by accessors: `analysis.items[0]` is Path("analysis", ("items", 0))."""

    root: str
    accessors: tuple[Accessor, ...] = ()

    def __str__(self) -> str:
        return self.root + "".join(f"[{a}]" if isinstance(a, int) else f".{a}" for a in self.accessors)

    def jinja(self) -> str:
        """The path as a Jinja expression over the renamed variables: `v_analysis["items"][0]`."""
        return PREFIX + self.root + "".join(f"[{a}]" if isinstance(a, int) else f'["{a}"]' for a in self.accessors)


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


def _value(value: Any, path: str, root: str, line: int, column: int) -> Any:
    if isinstance(value, Undefined):
        missing(value, path, root, line, column)
        return ""
    return value


def _items(value: Any, path: str, root: str, line: int, column: int) -> list[JsonValue]:
    if isinstance(value, Undefined):
        missing(value, path, root, line, column)
        return []
    if isinstance(value, list):
        return value
    if strict():
        raise MissingValue(f"{path} is not a list", line, column)
    return [] if value is None else [value]


_ENV = ENV.overlay()
_ENV.filters = {**ENV.filters, "dollar_value": _value, "dollar_items": _items}


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


def _call(filter_name: str, path: Path, where: tuple[int, int]) -> str:
    return f'({path.jinja()}) | {filter_name}("{path}", "{path.root}", {where[0]}, {where[1]})'


def _tag(body: str, where: tuple[int, int], opened: list[tuple[int, int]]) -> str:
    """The Jinja source for one tag; `opened` holds the positions of the foreach tags still open."""
    words = body.split()
    if words == ["/foreach"]:
        if not opened:
            raise TemplateSyntaxError("'${/foreach}' without '${foreach}'", *where)
        opened.pop()
        return "{%+ endfor +%}"
    try:
        if words[:1] == ["foreach"]:
            if len(words) != 4 or words[2] != "in":
                raise TemplateSyntaxError("expected '${foreach NAME in PATH}'")
            var, path = parse_path(words[1]), parse_path(words[3])
            if var.accessors:
                raise TemplateSyntaxError(f"loop variable {words[1]!r} must be a plain name")
            opened.append(where)
            return f"{{%+ for {var.jinja()} in {_call('dollar_items', path, where)} +%}}"
        path = parse_path(body)
    except TemplateSyntaxError as exc:
        raise TemplateSyntaxError(str(exc), *where) from exc
    return f"{{{{ {_call('dollar_value', path, where)} }}}}"


def _text(text: str) -> str:
    return _TEXT.sub(lambda m: _QUOTED[m[0]], text)


def convert(source: str) -> str:
    """The Jinja source of a template in the `${…}` syntax.

    Raises:
        TemplateSyntaxError: with the line and column of the problem.
    """
    out: list[str] = []
    opened: list[tuple[int, int]] = []
    i = 0
    for match in _TAG.finditer(source):
        start, end = match.span()
        if match[0] == "$${":
            out += [_text(source[i:start]), "$", _QUOTED["{"]]
            i = end
            continue
        where = _position(source, start)
        if match[1] is None:
            raise TemplateSyntaxError("unclosed '${'", *where)
        jinja = _tag(match[1], where, opened)
        span = _standalone(source, start, end) if jinja.startswith("{%") else None
        out += [_text(source[i : span[0] if span else start]), jinja]
        i = span[1] if span else end
    if opened:
        raise TemplateSyntaxError("'${foreach}' is never closed", *opened[-1])
    out.append(_text(source[i:]))
    return "".join(out)


def parse(source: str) -> Template:
    """Parse a template in the `${…}` syntax.

    Raises:
        TemplateSyntaxError: with the line and column of the problem.
    """
    return compile_source(convert(source), source, PREFIX, _ENV)


def is_dollar(texts: list[str]) -> bool:
    """Whether templates `texts` are in the `${…}` syntax: some hold a `${`, none a Jinja tag (`{{`, `{%`, `{#`)."""
    found = {m[0][:2] for text in texts for m in _USED.finditer(text)}
    return "${" in found and len(found) == 1
