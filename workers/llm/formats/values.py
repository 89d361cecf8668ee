"""Where a text value in tag markup ends: at its closer followed by valid structure, not at the first closer.

Engines read `<parameter=k>…</parameter>`, `<arg_value>…</arg_value>` and their kin by the structure around the
closer, so a value may hold its own closer, the next argument's tag or a call's end tag as text. The rules:

- the closer counts when what follows it (after whitespace) is markup (`after`), or the text ends there;
- an opening tag of the value's own kind written inside it (`nests`) pairs with the next closer, so an example
  `<parameter=x>v</parameter>` in a value stays text;
- a value whose closer is missing (engines tolerate it) ends at the next argument's opening tag (`opens`), or at
  the call's end tag (`ends`) unless the value's own closer comes later in the same call, which means the end tag
  was text in the value (a new call starting in between, `restarts`, means the end tag was real).
"""

import re
from dataclasses import dataclass, field

from workers.llm.formats.base import skip_ws


@dataclass(frozen=True)
class ValueMarkup:
    """How a text value ends in one markup format (see the module docstring)."""

    closer: re.Pattern[str]
    after: re.Pattern[str]
    opens: re.Pattern[str]
    nests: re.Pattern[str] | None = None
    ends: re.Pattern[str] | None = None
    restarts: re.Pattern[str] | None = None
    _tokens: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        closer = f"(?P<close>{self.closer.pattern})"
        tokens = f"{closer}|(?P<nest>{self.nests.pattern})" if self.nests else closer
        object.__setattr__(self, "_tokens", re.compile(tokens))

    def closes(self, text: str, pos: int) -> tuple[int, int] | None:
        """The closer that ends the value from `pos` by structure, counting nested pairs; None if none does."""
        depth = 0
        for token in self._tokens.finditer(text, pos):
            if token["close"] is None:
                depth += 1
            elif depth:
                depth -= 1
            elif self._followed(text, token.end()):
                return token.span("close")
        return None

    def _followed(self, text: str, pos: int) -> bool:
        at = skip_ws(text, pos)
        return at == len(text) or self.after.match(text, at) is not None


def value_end(text: str, pos: int, markup: ValueMarkup) -> tuple[int, int]:
    """Where a text value that starts at `pos` ends: (end of value, resume index); (-1, -1) when it was cut off."""
    closed = markup.closes(text, pos)
    end = _end_stop(text, pos, markup, closed[0] if closed else None)
    if closed is not None and (end is None or closed[0] < end.start()):
        return closed
    stops = [m.start() for m in (markup.opens.search(text, pos), end) if m]
    if stops:
        return min(stops), min(stops)
    plain = markup.closer.search(text, pos)
    return plain.span() if plain else (-1, -1)


def _end_stop(text: str, pos: int, markup: ValueMarkup, closed: int | None) -> re.Match[str] | None:
    found = markup.ends.search(text, pos) if markup.ends else None
    if found is None or closed is None or closed < found.start():
        return found
    restarted = markup.restarts.search(text, found.end(), closed) if markup.restarts else None
    return found if restarted else None
