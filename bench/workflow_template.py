"""Workflow templates: parse and render time of the Jinja2 templates against the hand-written `${…}` engine.

Every template of the bundled definitions (instructions, tool-call arguments, completions) is parsed and rendered
in the same run, with one context that defines every variable they read, three ways: the hand-written engine and the
`${…}` converter read the definitions as they were last written in `${…}` (`DOLLAR_COMMIT`), Jinja2 reads them as
they are; the rendered texts must be equal. The hand-written engine is read from git at the commit where it last
lived (`BASELINE_COMMIT`), so this bench runs without keeping it in the tree.
Usage: python bench/workflow_template.py [--rounds 300]   (run from the repository, with git on PATH)
"""

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import JsonValue

from workers.workflows import dollar
from workers.workflows import template as jinja_engine
from workers.workflows.loader import builtin_dir, parse_spec

ROOT = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "11772bfc835ab3df12b129e32ec6a422098a530e"
"""The last commit with the hand-written `${…}` engine in workers/workflows/template.py."""
DOLLAR_COMMIT = "66ab3eccc6ad6918e034f73f09c2f7559efd36c7"
"""The last commit with the bundled definitions in the `${…}` syntax."""

CONTEXT: dict[str, JsonValue] = {
    "state_id": "wf_01HZX",
    "workflow": "bench",
    "thoughts": [{"step": f"step_{i}", "text": f"reply number {i} with a few words in it"} for i in range(6)],
    "problem": "Pick a projection for a continental DEM mosaic",
    "decomposition": ["area distortion", "datum", "resampling", "tiling"],
    "analysis_1": "Equal-area matters most for the slope statistics.",
    "synthesis": "Use EPSG:3035 with bilinear resampling.",
    "goal": "Statistics per country in square metres",
    "uri": "s3://bucket/dem.tif",
    "inspection": {"crs": "EPSG:4326", "size": [8192, 8192], "bands": 1},
    "crs": {"dst_crs": "EPSG:3035", "why": "equal area over Europe"},
    "resampling": {"output": "dem_3035.tif", "method": "bilinear"},
    "verification": {"verdict": "ok", "notes": "CRS and extent as expected"},
    "question": "Where are the steepest slopes?",
    "subquestions": ["which DEM", "which slope algorithm", "which threshold"],
    "findings": [f"finding {i}: a sentence with a source" for i in range(5)],
    "assessment": "enough",
    "answer": "The Alps, then the Pyrenees.",
}


def at_commit(commit: str, path: Path) -> str:
    """The text of `path` (in the repository) at `commit`."""
    where = path.resolve().relative_to(ROOT).as_posix()
    return subprocess.run(
        ["git", "show", f"{commit}:{where}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def baseline_engine() -> ModuleType:
    """The hand-written engine, loaded from `BASELINE_COMMIT` as a module."""
    source = at_commit(BASELINE_COMMIT, ROOT / "workers/workflows/template.py")
    module = ModuleType("handwritten_template")
    exec(compile(source, "handwritten_template.py", "exec"), module.__dict__)  # our own file, from git
    return module


def sources(read: Callable[[Path], str]) -> list[str]:
    """Every template in the bundled definitions, each file's text as `read` gives it."""
    found: list[str] = []
    for path in sorted(builtin_dir().glob("*.yaml")):
        spec = parse_spec(path, read(path))
        found.append(spec.completion)
        for step in spec.steps:
            found.append(step.instruction)
            found += [value for call in step.calls for value in call.with_.values()]
    return found


def per_round_us(work: Callable[[], Any], rounds: int) -> list[float]:
    """Microseconds per call of `work`, one figure per round."""
    times: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1e6)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    rounds = parser.parse_args().rounds
    texts = sources(lambda path: path.read_text(encoding="utf-8"))
    dollar_texts = sources(lambda path: at_commit(DOLLAR_COMMIT, path))
    engines = {"hand-written": baseline_engine(), "converted": dollar, "jinja2": jinja_engine}
    inputs = {"hand-written": dollar_texts, "converted": dollar_texts, "jinja2": texts}
    parsed = {name: [engine.parse(t) for t in inputs[name]] for name, engine in engines.items()}
    rendered = {name: [t.render(CONTEXT, missing="empty") for t in ts] for name, ts in parsed.items()}
    if not rendered["hand-written"] == rendered["converted"] == rendered["jinja2"]:
        raise SystemExit("the engines render the bundled definitions differently")

    def parse_all(name: str) -> Callable[[], Any]:
        return lambda: [engines[name].parse(t) for t in inputs[name]]

    def render_all(templates: list[Any]) -> Callable[[], Any]:
        return lambda: [t.render(CONTEXT, missing="empty") for t in templates]

    figures: dict[tuple[str, str], float] = {}
    for name in engines:  # alternate the engines so a noisy moment hits both
        figures["parse", name] = statistics.median(per_round_us(parse_all(name), max(1, rounds // 10)))
        figures["render", name] = statistics.median(per_round_us(render_all(parsed[name]), rounds))
    print(f"{len(texts)} templates from {builtin_dir()}, {sum(map(len, texts))} characters; medians per set")
    for what in ("parse", "render"):
        old_us = figures[what, "hand-written"]
        for name in ("converted", "jinja2"):
            new_us = figures[what, name]
            each = f"{old_us / len(texts):.1f} → {new_us / len(texts):.1f} µs a template"
            print(f"  {what:6} hand-written {old_us:9.1f} µs, {name} {new_us:9.1f} µs ({each}), {new_us / old_us:.2f}×")


if __name__ == "__main__":
    main()
