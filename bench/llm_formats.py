"""Exact-extraction rate per format family over the labelled samples, calls invented from broken output, and
the extractor's time per reply against the same calls written in the generic JSON format (baseline, same run).

    .venv/bin/python bench/llm_formats.py [--failures]

The samples (`tests/unit/workers/llm/corpus/samples.json`, read as data: the bench imports no tests) were written
from the models' public chat templates and documentation; they are also kept passing by `test_corpus.py`, so these
figures track regressions, not how the extractor does on outputs it has never seen.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.llm.extract import Extraction, extract_with_index
from workers.llm.validation import build_index

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "unit" / "workers" / "llm" / "corpus"
INDEX = build_index(json.loads((CORPUS / "tools.json").read_text()))
Sample = dict[str, Any]
"""One labelled reply: `id`, `text`, `calls` ([name, params] pairs) and `kind` (ok, truncated, malformed, reasoning)."""


def families() -> dict[str, list[Sample]]:
    """Every family's samples, by family name."""
    return json.loads((CORPUS / "samples.json").read_text())


def score(samples: list[Sample], show: bool) -> tuple[int, int]:
    """(exactly extracted, calls invented) over `samples`; prints each miss when `show`. Exact: the labelled calls
    in order, and errors exactly when the reply is broken (truncated or malformed)."""
    exact = invented = 0
    for sample in samples:
        found: Extraction = extract_with_index(sample["text"], INDEX)
        calls = [[c.tool, c.params] for c in found.calls]
        broken = sample["kind"] in ("truncated", "malformed")
        hit = calls == sample["calls"] and bool(found.errors) == broken
        exact += hit
        invented += sum(call not in sample["calls"] for call in calls)
        if show and not hit:
            print(f"    miss {sample['id']}: {calls} {[e.kind for e in found.errors]}")
    return exact, invented


def latencies_us(texts: list[str], rounds: int = 30) -> list[float]:
    """Microseconds per `extract_with_index` call, every text `rounds` times."""
    out: list[float] = []
    for _ in range(rounds):
        for text in texts:
            started = time.perf_counter()
            extract_with_index(text, INDEX)
            out.append((time.perf_counter() - started) * 1e6)
    return out


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failures", action="store_true", help="list every sample not extracted exactly")
    show = parser.parse_args().failures
    total = exact_all = invented_all = 0
    print(f"{'family':<14} {'samples':>7} {'exact':>7} {'rate':>7} {'invented':>9}")
    for family, samples in families().items():
        exact, invented = score(samples, show)
        total, exact_all, invented_all = total + len(samples), exact_all + exact, invented_all + invented
        print(f"{family:<14} {len(samples):>7} {exact:>7} {exact / len(samples):>7.1%} {invented:>9}")
    print(f"{'overall':<14} {total:>7} {exact_all:>7} {exact_all / total:>7.1%} {invented_all:>9}")
    every = [s for samples in families().values() for s in samples]
    native = latencies_us([s["text"] for s in every])
    generic = latencies_us([_as_generic_json(s) for s in every])
    print(
        f"\nper reply: native formats median {statistics.median(native):.1f} us, p99 {_pct(native, 0.99):.1f} us; "
        f"the same calls as generic JSON median {statistics.median(generic):.1f} us, p99 {_pct(generic, 0.99):.1f} us "
        f"({statistics.median(native) / statistics.median(generic):.2f}x)"
    )


def _as_generic_json(sample: Sample) -> str:
    """The sample's labelled calls as the generic prompt template asks for them (its text when it has none)."""
    lines = [json.dumps({"tool": name, "params": params}, ensure_ascii=False) for name, params in sample["calls"]]
    return "\n".join(lines) or sample["text"]


if __name__ == "__main__":
    main()
