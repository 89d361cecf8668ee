"""Reference documents served as resources: markdown files split into `## key` sections with optional tags."""

from dataclasses import dataclass, field
from functools import cache
from importlib import resources

DOCS = ("crs", "resampling", "compression", "glossary", "raster")
"""The reference documents beside this module (`<name>.md`)."""


@dataclass(frozen=True)
class Section:
    """One `## key` section: its key, its tags (a `Tags:` line under the heading), and its markdown."""

    key: str
    tags: frozenset[str] = field(default_factory=frozenset)
    text: str = ""

    def first_sentence(self) -> str:
        """The section's first sentence, on one line."""
        body = " ".join(self.text.split("\n", 1)[-1].split())
        return body.split(". ", 1)[0].rstrip(".") + "."


@dataclass(frozen=True)
class Doc:
    """A reference document: the text before the first section, and the sections in order."""

    name: str
    preamble: str
    sections: tuple[Section, ...]

    def keys(self) -> list[str]:
        """Section keys and tags, the words `select` accepts."""
        return sorted({s.key for s in self.sections} | {t for s in self.sections for t in s.tags})

    def select(self, word: str) -> str | None:
        """The whole document for `all`, the sections whose key or a tag is `word`, or None when none match."""
        word = word.strip().lower()
        if word in ("", "all"):
            return self.text()
        chosen = [s.text for s in self.sections if word == s.key or word in s.tags]
        return "\n\n".join([self.preamble.splitlines()[0], *chosen]) if chosen else None

    def index(self, word: str) -> str | None:
        """One line per matching section (key, tags, first sentence), or None when none match."""
        word = word.strip().lower()
        chosen = [s for s in self.sections if word in ("", "all", s.key) or word in s.tags]
        lines = [f"- **{s.key}** ({', '.join(sorted(s.tags))}): {s.first_sentence()}" for s in chosen]
        return "\n".join([self.preamble.splitlines()[0], "", *lines]) if chosen else None

    def text(self) -> str:
        """The whole document as markdown."""
        return "\n\n".join([self.preamble, *(s.text for s in self.sections)])


def _section(block: str) -> Section:
    lines = block.strip().splitlines()
    key = lines[0].removeprefix("## ").strip().lower()
    tags: frozenset[str] = frozenset()
    if len(lines) > 1 and lines[1].startswith("Tags:"):
        tags = frozenset(t.strip().lower() for t in lines[1].removeprefix("Tags:").split(",") if t.strip())
        lines = [lines[0], *lines[2:]]
    return Section(key=key, tags=tags, text="\n".join(lines).strip())


@cache
def load(name: str) -> Doc:
    """Read and split `<name>.md` (once per process).

    Raises:
        KeyError: `name` is not one of `DOCS`.
    """
    if name not in DOCS:
        raise KeyError(name)
    raw = (resources.files(__name__) / f"{name}.md").read_text(encoding="utf-8")
    preamble, *blocks = ("\n" + raw).split("\n## ")
    return Doc(name, preamble.strip(), tuple(_section("## " + b) for b in blocks))
