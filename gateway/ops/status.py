"""`python -m gateway.ops.status`: the figures of `/ops` in the terminal (rich), read from the same summary; what
`geogate status` runs."""

import argparse
import asyncio
import json
import sys

import redis.asyncio as aredis
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gateway.ops.figures import WINDOWS
from gateway.ops.render import fmt_age, fmt_int, fmt_ms, fmt_pct, fmt_rate
from gateway.ops.summary import OpsSummary, read_summary
from geogate.calls import ops_feed
from geogate.calls.store import EventStore
from geogate.eventlog.storage import StorageReport, storage_report
from geogate.settings import Settings, SettingsError, process_settings

WINDOW_NAMES = {"5m": "last 5 minutes", "1h": "last hour", "all": "since the log began"}


def run_status(settings: Settings, window: str, json_out: bool) -> None:
    """Bring the summary level with the log as it was (harmless if a gateway does it too), then print it."""
    store = EventStore.from_settings(settings)
    ops_feed.catch_up(store.redis, store.keys, bounded=True)  # a busy cluster's appends must not keep it chasing
    summary = asyncio.run(_read(settings, window))
    used = storage_report(store, settings.retention)
    if json_out:
        print(json.dumps({**summary.model_dump(mode="json"), "storage": used.model_dump(mode="json")}, indent=2))
        return
    piped = not sys.stdout.isatty()  # a pipe or a file gets whole lines, not the 80 columns rich assumes
    Console(highlight=False, width=200 if piped else None).print(Group(view(summary), storage(used)))


async def _read(settings: Settings, window: str) -> OpsSummary:
    client = aredis.Redis.from_url(settings.require_redis_url(), decode_responses=False)
    try:
        return await read_summary(client, settings.keys(), window)
    finally:
        await client.aclose()


def view(summary: OpsSummary) -> Group:
    return Group(headline(summary), tools(summary), queues_and_workers(summary), errors(summary))


def headline(summary: OpsSummary) -> Text:
    f = summary.figures
    line = Text()
    line.append("Geogate ", style="bold")
    line.append(f"{WINDOW_NAMES[summary.window]} · ", style="dim")
    line.append(f"{fmt_int(f.finished)} calls finished, ")
    line.append(f"{fmt_int(f.failures)} failures", style="red" if f.failures else "")
    line.append(f" ({fmt_pct(f.failures / f.finished if f.finished else None)}), ")
    line.append(f"{fmt_int(f.caller_errors)} caller errors · {summary.in_flight} in flight · ")
    line.append(f"{fmt_int(summary.events)} events absorbed, lag {summary.lag}", style="yellow" if summary.lag else "")
    return line


def tools(summary: OpsSummary) -> Table:
    table = Table(title="Tools (latency p50 / p95 / p99)", title_justify="left", expand=True)
    table.add_column("tool", no_wrap=True)
    for name in ("req", "ok", "caller err", "failures", "calls/s"):
        table.add_column(name, justify="right")
    for stage in ("queue", "run", "handler", "answer"):
        table.add_column(stage, no_wrap=True)
    for row in summary.figures.tools:
        stages = []
        for name in ("queue", "run", "handler", "answer"):
            s = row.stages.get(name)
            stages.append(trio(s.p50_ms, s.p95_ms, s.p99_ms) if s and s.count else "–")
        failures = Text(fmt_int(row.failures), style="red" if row.failures else "")
        counts = (fmt_int(row.requested), fmt_int(row.succeeded), fmt_int(row.caller_errors), failures)
        table.add_row(row.tool, *counts, fmt_rate(row.per_s), *stages)
    return table


def storage(used: StorageReport) -> Table:
    """Redis memory and each stream against the retention limits."""
    limit = fmt_bytes(used.max_memory_bytes) if used.max_memory_bytes else "no maxmemory (noeviction)"
    table = Table(
        title=f"Storage · Redis {fmt_bytes(used.used_memory_bytes)} used (peak {fmt_bytes(used.peak_memory_bytes)}, "
        f"limit {limit}) · snapshot of {used.snapshot_streams} stream(s) · {used.live_consumers} live reader(s)",
        title_justify="left",
    )
    for name in ("stream", "events", "max events", "oldest", "max age"):
        table.add_column(name, justify="left" if name == "stream" else "right")
    for s in used.streams:
        table.add_row(
            s.stream,
            fmt_int(s.length),
            fmt_int(s.max_length) if s.max_length else "–",
            fmt_age(s.oldest_age_s),
            fmt_age(float(s.max_age_s)) if s.max_age_s else "–",
        )
    return table


def fmt_bytes(n: int | None) -> str:
    size = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def trio(*values: float | None) -> str:
    """Three latencies in one short cell: `2.2 / 24.1 / 51.3 ms` (the unit once when they share it)."""
    shown = [fmt_ms(v) for v in values]
    if all(v.endswith(" ms") for v in shown):
        return " / ".join(v.removesuffix(" ms") for v in shown) + " ms"
    return " / ".join(shown)


def queues_and_workers(summary: OpsSummary) -> Table:
    grid = Table.grid(expand=True, padding=(0, 2))
    queues = Table(title="Queues", title_justify="left")
    for name in ("queue", "waiting", "oldest"):
        queues.add_column(name, justify="left" if name == "queue" else "right")
    for q in summary.queues:
        queues.add_row(q.queue, fmt_int(q.depth), fmt_age(q.oldest_age_s))
    workers = Table(title="Workers", title_justify="left")
    for name in ("worker", "state", "queues", "last sign", "holds"):
        workers.add_column(name)
    for w in summary.workers:
        held = ", ".join(c[-8:] for c in w.holding[:3]) + (f" +{len(w.holding) - 3}" if len(w.holding) > 3 else "")
        state = "running" if w.source == "lease" else "silent"
        workers.add_row(w.name, state, ",".join(w.queues) or "–", fmt_age(w.age_s), held or "idle")
    grid.add_row(queues, workers)
    return grid


def errors(summary: OpsSummary) -> Table:
    f = summary.figures
    grid = Table.grid(expand=True, padding=(0, 2))
    codes = Table(title="Errors by code", title_justify="left")
    codes.add_column("code")
    codes.add_column("whose")
    codes.add_column("count", justify="right")
    for e in f.errors:
        codes.add_row(
            Text(e.name, style="" if e.caller else "red"), "caller" if e.caller else "failure", fmt_int(e.count)
        )
    other = Table(title="Cache · sandbox · LLM", title_justify="left")
    other.add_column("what")
    other.add_column("value", justify="right")
    hits, misses = f.cache.get("hit", 0), f.cache.get("miss", 0)
    other.add_row("justification hits / misses", f"{fmt_int(hits)} / {fmt_int(misses)}")
    for e in f.sandbox:
        other.add_row(f"sandbox {e.name}", fmt_int(e.count))
    for m in f.llm:
        other.add_row(f"{m.model}: first attempt ok, retries", f"{fmt_pct(m.first_ok_rate)}, {fmt_int(m.retries)}")
    grid.add_row(codes, other)
    return grid


def main(argv: list[str] | None = None) -> None:
    """Print the status of the Redis the settings name (`geogate status` resolves it and passes it on)."""
    parser = argparse.ArgumentParser(prog="geogate status", description="The figures of /ops, in the terminal.")
    parser.add_argument("--window", default="1h", choices=WINDOWS, help="5m, 1h or all")
    parser.add_argument("--json", dest="json_out", action="store_true", help="the summary as JSON, as /ops/api/summary")
    ns = parser.parse_args(argv)
    try:
        run_status(process_settings(), ns.window, ns.json_out)
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    main(sys.argv[1:])
