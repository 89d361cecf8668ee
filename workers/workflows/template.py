"""Workflow templates: Jinja2 syntax, compiled and rendered by Jinja2's `SandboxedEnvironment`.

`{{ var }}`, `{{ var[0] }}`, `{{ var.field }}`, `{% for x in xs %} … {% endfor %}` and the rest of Jinja2, with
these rules on top:

- Lookups read JSON only: a field is a dict key, an index a list item, never a Python attribute.
- Every value printed reads as `format_value` writes it (lists as bullet lines, objects as JSON, None as nothing).
- A variable the context lacks is an error (`UndefinedVariable`). A missing index or field, or a loop over one, is
  an error when rendering strictly (`MissingValue`) and nothing when rendering leniently.
- A block tag alone on its line takes its line with it (`trim_blocks`, `lstrip_blocks`), so YAML block scalars
  render without stray blank lines.
- Jinja's own filters; no globals and no tests.

Definitions in the older `${…}` syntax are converted to this one when they load (`workers.workflows.dollar`).
"""

import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import jinja2
from jinja2 import StrictUndefined, Undefined, meta
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import missing as missing_
from pydantic import JsonValue

Accessor = str | int
"""A `.field` (str) or an `[index]` (int) after the variable's name."""
Missing = Literal["error", "empty"]

_MODE: ContextVar[Missing] = ContextVar("workflow_template_missing", default="error")
"""How the render under way treats a missing index or field."""


class TemplateError(ValueError):
    """Base of template errors: a stable `code`, and where in the template (1-based line and column, 0: unknown)."""

    code = "template.error"

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        where = f" (line {line}, column {column})" if line and column else f" (line {line})" if line else ""
        super().__init__(f"{message}{where}")
        self.line, self.column = line, column


class TemplateSyntaxError(TemplateError):
    """The template cannot be parsed (unclosed tag, unbalanced loop, bad expression)."""

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


class _Unset(StrictUndefined):
    """A variable the context lacks: any use of it is an `UndefinedVariable`."""

    __slots__ = ()

    def __init__(self, hint: str | None = None, obj: Any = missing_, name: str | None = None, exc: Any = None) -> None:
        super().__init__(hint, obj, name, lambda _message: UndefinedVariable(name or "?"))  # type: ignore[arg-type]


class _Absent(StrictUndefined):
    """An index or field the value does not have: strict rendering raises on it, lenient rendering reads nothing."""

    __slots__ = ("accessor",)

    def __init__(self, accessor: Accessor) -> None:
        super().__init__(name=str(accessor))
        self.accessor = accessor

    def __str__(self) -> str:
        missing(self)
        return ""

    def __iter__(self) -> Iterator[Any]:
        missing(self)
        return iter(())


def missing(value: Undefined, path: str = "", root: str = "", line: int = 0, column: int = 0) -> None:
    """Raise for `value`, which the context lacks, unless it is a missing index or field read leniently.

    `path` (and its variable, `root`) names the value in the message, `line` and `column` place it, when the caller
    knows them.
    """
    if not isinstance(value, _Absent):
        raise UndefinedVariable(root or value._undefined_name or "?", line, column)
    if strict():
        raise MissingValue(f"{path or 'the value'} has no {value.accessor!r}", line, column)


def strict() -> bool:
    """Whether the render under way raises on a missing index or field."""
    return _MODE.get() == "error"


class _JsonSandbox(SandboxedEnvironment):
    """Reads JSON only: `.field` and `["field"]` are dict keys, `[i]` list items; never a Python attribute."""

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Undefined):
            return obj  # the first miss travels to the output, which reports it
        if isinstance(argument, int) and isinstance(obj, list) and -len(obj) <= argument < len(obj):
            return obj[argument]
        if isinstance(argument, str) and isinstance(obj, dict) and argument in obj:
            return obj[argument]
        return _Absent(argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self.getitem(obj, attribute)


def _finalize(value: Any) -> str:
    if isinstance(value, Undefined):
        missing(value)
        return ""
    return format_value(value)


ENV = _JsonSandbox(
    undefined=_Unset,
    finalize=_finalize,
    autoescape=False,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.tests, ENV.globals = {}, {}


def _line(exc: BaseException) -> int:
    """The template line the error was raised at (Jinja rewrites the traceback to template lines), else 0."""
    tb, line = exc.__traceback__, 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


@dataclass(frozen=True)
class Template:
    """A parsed template. Build it with `parse()`; render it as often as needed.

    `prefix` is put before every context name: the `${…}` converter writes its variables as `v_<name>`, so no
    name meets a Jinja keyword or literal.
    """

    source: str
    compiled: jinja2.Template = field(compare=False, repr=False)
    free: frozenset[str] = field(compare=False, repr=False)
    prefix: str = ""

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
        token = _MODE.set(missing)
        try:
            return self.compiled.render({f"{self.prefix}{k}": v for k, v in context.items()})
        except TemplateError as exc:
            if exc.line:
                raise
            raise self._placed(exc) from exc
        finally:
            _MODE.reset(token)

    def _placed(self, exc: TemplateError) -> TemplateError:
        """`exc` with the template's names and the line it was raised at."""
        line = _line(exc)
        if isinstance(exc, UndefinedVariable):
            return UndefinedVariable(exc.name.removeprefix(self.prefix), line)
        message = str(exc).replace(f" {self.prefix}", " ") if self.prefix else str(exc)
        return type(exc)(message, line)


def compile_source(jinja: str, source: str, prefix: str = "", env: jinja2.Environment = ENV) -> Template:
    """A `Template` of Jinja source `jinja` (compiled in `env`), written as `source`.

    Raises:
        TemplateSyntaxError: with the line of the problem.
    """
    try:
        tree = env.parse(jinja)
        compiled = env.from_string(tree)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateSyntaxError(exc.message or "invalid template", exc.lineno) from exc
    free = frozenset(name.removeprefix(prefix) for name in meta.find_undeclared_variables(tree))
    return Template(source, compiled, free, prefix)


def parse(source: str) -> Template:
    """Parse a template in Jinja2 syntax.

    Raises:
        TemplateSyntaxError: with the line of the problem.
    """
    return compile_source(source, source)


def render(source: str, context: Mapping[str, JsonValue], *, missing: Missing = "error") -> str:
    """Parse and render in one go (see `Template.render`)."""
    return parse(source).render(context, missing=missing)
