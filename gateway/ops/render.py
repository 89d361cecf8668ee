"""Server-side rendering of the ops pages: one Jinja2 environment (autoescaped) and the number formats people read."""

from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape


def fmt_ms(value: float | None) -> str:
    """Milliseconds as people read them: 0.42 ms, 12.3 ms, 1,250 ms, 2.5 s, 3.1 min."""
    if value is None:
        return "–"
    if value < 1:
        return f"{value:.2f} ms"
    if value < 1000:
        return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.2f} s"
    return f"{value / 60_000:.1f} min"


def fmt_age(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def fmt_pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def fmt_rate(value: float | None) -> str:
    return "–" if value is None else f"{value:,.2f}"


def fmt_int(value: int) -> str:
    return f"{value:,}"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(files("gateway.ops").joinpath("templates"))),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ms=fmt_ms, age=fmt_age, pct=fmt_pct, rate=fmt_rate, int=fmt_int)
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
