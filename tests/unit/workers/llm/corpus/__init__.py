"""A labelled sample set of raw model outputs, per format family, written by hand from the models' public chat
templates and documentation (not copied from any parser's tests).

Each sample is a reply as an engine that does not parse tool calls passes it through, special tokens written
out, with the calls a careful reader would execute. `kind` says what the reply is: `ok` (calls or a plain
answer, no error), `truncated` / `malformed` (an error must come out, and only the labelled calls: the complete
ones written before the cut or the broken call), `reasoning` (calls written only inside reasoning: none may come
out, no error).
The samples are data (`samples.json`: family → samples; `tools.json`: the tools they call, geospatial, with every
JSON type a value can need and keys that need escaping in attribute syntax), so that `bench/llm_formats.py` reads
the same set without importing tests; `test_corpus.py` keeps it passing.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

HERE = Path(__file__).parent
TOOLS: list[dict[str, Any]] = json.loads((HERE / "tools.json").read_text())

Kind = Literal["ok", "truncated", "malformed", "reasoning"]


@dataclass(frozen=True)
class Sample:
    """One raw reply and its label."""

    id: str
    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    kind: Kind = "ok"

    @property
    def broken(self) -> bool:
        """True when the reply is malformed or cut off: an error is expected, and only the labelled calls."""
        return self.kind in ("truncated", "malformed")


@dataclass(frozen=True)
class Verdict:
    """How the extractor did on one sample."""

    exact: bool
    """The calls (names and arguments, in order) are the labelled ones, and errors came exactly when expected."""
    invented: int
    """Calls that are not in the label: made up from a broken call, from reasoning, or from prose."""


def judge(sample: Sample, calls: list[tuple[str, dict[str, Any]]], errors: int) -> Verdict:
    """Compare what the extractor found with the label."""
    expected = [(name, params) for name, params in sample.calls]
    exact = calls == expected and (errors > 0) == sample.broken
    unmatched = list(expected)
    invented = 0
    for call in calls:
        if call in unmatched:
            unmatched.remove(call)
        else:
            invented += 1
    return Verdict(exact, invented)


def families() -> dict[str, list[Sample]]:
    """Every family's samples, by family name."""
    data = json.loads((HERE / "samples.json").read_text())
    return {
        family: [
            Sample(item["id"], item["text"], tuple((name, params) for name, params in item["calls"]), item["kind"])
            for item in samples
        ]
        for family, samples in data.items()
    }
