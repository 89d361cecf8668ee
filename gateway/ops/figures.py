"""The ops figures as models, computed from the summary's counters alone (no I/O): rows per tool, percentiles, rates.

`/ops`, `/ops/api/summary`, `/metrics` and `geogate status` all show these, so they agree by construction.
"""

from collections import Counter, defaultdict
from collections.abc import Mapping

from pydantic import BaseModel, Field

from geogate.calls.projections.ops import BUCKETS_MS, STAGES

WINDOWS: dict[str, int | None] = {"5m": 300, "1h": 3600, "all": None}
"""Window name → seconds (None: since the log began)."""

CALLERS_KINDS = frozenset(
    {
        "invalid",
        "not_found",
        "exists",
        "out_of_range",
        "outside_workspace",
        "not_a_folder",
        "unknown",
        "unsupported",
        "no_overlap",
        "missing",
        "empty",
        "too_large",
        "required",
        "cancelled",
    }
)
"""The last part of an error code (`path.not_found` → `not_found`) that makes it the caller's error: an argument
the call cannot run with, an input that is not there, an output that already is, a cancellation. Any other code is
a failure: the server's, a worker's or GDAL's (`job.crashed`, `gdal.write_failed`, `llm.provider_error`, …)."""


def callers_error(code: str) -> bool:
    """Whether a call that ended with `code` failed through its caller's doing rather than the server's."""
    kind = code.rsplit(".", 1)[-1]
    return kind in CALLERS_KINDS or kind.startswith(("unknown_", "missing_"))


class Stage(BaseModel):
    """Latency of one stage of one tool's calls; percentiles interpolated within fixed buckets."""

    count: int = 0
    mean_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None


class ToolRow(BaseModel):
    tool: str
    requested: int = 0
    succeeded: int = 0
    failed: int = 0
    cancel_requested: int = 0
    handler_succeeded: int = 0
    handler_failed: int = 0
    caller_errors: int = 0
    """Of `failed`, the calls that ended with an error of the caller's making (`callers_error`)."""
    per_s: float | None = None
    """Finished calls per second over the window (None for the whole log)."""
    stages: dict[str, Stage] = Field(default_factory=dict)

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed

    @property
    def failures(self) -> int:
        """Failed calls that were not the caller's errors: the server's, a worker's or GDAL's."""
        return self.failed - self.caller_errors

    @property
    def error_rate(self) -> float | None:
        """Failures (not the caller's errors) per finished call."""
        return self.failures / self.finished if self.finished else None


class Count(BaseModel):
    name: str
    count: int
    caller: bool = False
    """An error code of the caller's making (`callers_error`); counts of other kinds leave it False."""


class LlmRow(BaseModel):
    """One model's reliability: how often its first attempt at a turn gave usable output."""

    model: str
    turns: int = 0
    first_ok: int = 0
    retries: int = 0
    provider_retries: int = 0
    attempts: int = 0

    @property
    def first_ok_rate(self) -> float | None:
        return self.first_ok / self.turns if self.turns else None


class Figures(BaseModel):
    """Everything computed from one window's counters."""

    tools: list[ToolRow] = Field(default_factory=list)
    errors: list[Count] = Field(default_factory=list)
    events: list[Count] = Field(default_factory=list)
    sandbox: list[Count] = Field(default_factory=list)
    cache: dict[str, int] = Field(default_factory=dict)
    llm: list[LlmRow] = Field(default_factory=list)

    def tool(self, name: str) -> ToolRow | None:
        return next((t for t in self.tools if t.tool == name), None)

    @property
    def finished(self) -> int:
        return sum(t.finished for t in self.tools)

    @property
    def failed(self) -> int:
        """Every failed call, the caller's errors included."""
        return sum(t.failed for t in self.tools)

    @property
    def caller_errors(self) -> int:
        return sum(t.caller_errors for t in self.tools)

    @property
    def failures(self) -> int:
        """Failed calls that were not the caller's errors."""
        return sum(t.failures for t in self.tools)


def quantile(q: float, buckets: list[int]) -> float | None:
    """The q-quantile in ms from per-bucket counts (last entry: +Inf), interpolated linearly inside its bucket.

    As Prometheus' `histogram_quantile`: a rank in the +Inf bucket answers the highest finite bound.
    """
    total = sum(buckets)
    if total == 0:
        return None
    rank, seen = q * total, 0
    for index, count in enumerate(buckets):
        if count and seen + count >= rank:
            if index >= len(BUCKETS_MS):
                return BUCKETS_MS[-1]
            lower = BUCKETS_MS[index - 1] if index else 0.0
            return lower + (BUCKETS_MS[index] - lower) * (rank - seen) / count
        seen += count
    return BUCKETS_MS[-1]


def stage(buckets: list[int], sum_us: int) -> Stage:
    count = sum(buckets)
    if not count:
        return Stage()
    return Stage(
        count=count,
        mean_ms=sum_us / count / 1000,
        p50_ms=quantile(0.5, buckets),
        p95_ms=quantile(0.95, buckets),
        p99_ms=quantile(0.99, buckets),
    )


def _split(counters: Mapping[str, int]) -> dict[str, dict[tuple[str, ...], int]]:
    kinds: dict[str, dict[tuple[str, ...], int]] = defaultdict(dict)
    for name, value in counters.items():
        kind, *rest = name.split("|")
        kinds[kind][tuple(rest)] = value
    return kinds


def histograms(counters: Mapping[str, int]) -> dict[tuple[str, str], tuple[list[int], int]]:
    """(tool, stage) → (count per bucket, +Inf last; sum in µs)."""
    kinds = _split(counters)
    found: dict[tuple[str, str], tuple[list[int], int]] = {}
    for (tool, name, index), count in kinds["hist"].items():
        buckets, _ = found.setdefault((tool, name), ([0] * (len(BUCKETS_MS) + 1), 0))
        buckets[int(index)] += count
    for key in found:
        found[key] = (found[key][0], kinds["hsum"].get(key, 0))
    return found


def figures(counters: Mapping[str, int], seconds: int | None) -> Figures:
    """The figures of one window from its summed counters; `seconds` is the window's length for rates."""
    kinds = _split(counters)
    rows: dict[str, ToolRow] = {}
    for (tool, outcome), count in kinds["calls"].items():
        row = rows.setdefault(tool, ToolRow(tool=tool))
        if outcome in ToolRow.model_fields:
            setattr(row, outcome, getattr(row, outcome) + count)
    for (tool, name), (buckets, sum_us) in histograms(counters).items():
        rows.setdefault(tool, ToolRow(tool=tool)).stages[name] = stage(buckets, sum_us)
    for row in rows.values():
        row.stages = {name: row.stages[name] for name in STAGES if name in row.stages}
        row.per_s = row.finished / seconds if seconds else None
    errors: Counter[str] = Counter()
    for (tool, code), count in kinds["error"].items():
        errors[code] += count
        if callers_error(code) and tool in rows:
            rows[tool].caller_errors += count
    for row in rows.values():
        row.caller_errors = min(row.caller_errors, row.failed)  # never more than the calls that failed
    return Figures(
        tools=sorted(rows.values(), key=lambda r: (-r.requested, r.tool)),
        errors=[e.model_copy(update={"caller": callers_error(e.name)}) for e in _counts(errors)],
        events=_counts(Counter({k[0]: v for k, v in kinds["event"].items()})),
        sandbox=_counts(Counter({k[0]: v for k, v in kinds["sandbox"].items()})),
        cache={k[0]: v for k, v in sorted(kinds["cache"].items())},
        llm=_llm(kinds["llm"]),
    )


def _counts(counter: Counter[str]) -> list[Count]:
    return [Count(name=name, count=count) for name, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]


def _llm(values: dict[tuple[str, ...], int]) -> list[LlmRow]:
    rows: dict[str, LlmRow] = {}
    for (model, kind), count in values.items():
        row = rows.setdefault(model, LlmRow(model=model))
        if kind in LlmRow.model_fields:
            setattr(row, kind, count)
    return sorted(rows.values(), key=lambda r: r.model)
