"""`python -m workers.llm parse|stats`: what `geogate llm …` runs (the gateway's CLI never imports workers)."""

import argparse
import sys
from collections.abc import Iterator
from typing import TextIO

from geogate.calls.store import EventStore
from geogate.settings import SettingsError, process_settings
from schemas.chat import LLMStats, ModelStats
from schemas.events.llm import LLMAttempted
from workers.llm.metrics import attempt_stats
from workers.llm.parse_cli import parse_lines

PAGE = 1000


def read_attempts(store: EventStore) -> Iterator[LLMAttempted]:
    """Every `llm.attempt` payload in the log, oldest first, read a page at a time."""
    cursor = "-"
    while True:
        page = store.read("llm", cursor, "+", count=PAGE)
        yield from (s.event.data for s in page if isinstance(s.event.data, LLMAttempted))
        if len(page) < PAGE:
            return
        cursor = f"({page[-1].entry_id}"


def render(stats: LLMStats, out: TextIO) -> None:
    """The metrics for people: per model, then retries, error kinds and tokens."""
    if not stats.by_model:
        out.write("no llm.attempt events in the log\n")
        return
    _table(out, "model", stats.by_model)
    out.write("\n")
    _table(out, "format", stats.by_format)
    out.write(f"\nmean retries per turn: {stats.mean_retries:.2f}\n")
    out.write(f"provider errors (not model mistakes): {stats.provider_errors}\n")
    kinds = ", ".join(f"{kind} {count}" for kind, count in stats.error_kinds[:10]) or "none"
    out.write(f"most common error kinds: {kinds}\n")
    out.write(f"conversations: {len(stats.tokens_per_conversation)}, ")
    out.write(f"mean tokens per conversation: {stats.mean_tokens_per_conversation:.0f}\n")


def _table(out: TextIO, title: str, rows: dict[str, ModelStats]) -> None:
    out.write(f"{title:<32} {'turns':>6} {'first-try ok':>12} {'mean retries':>12}\n")
    for name, row in rows.items():
        out.write(f"{name:<32} {row.turns:>6} {row.first_attempt_success_rate:>12.1%} {row.mean_retries:>12.2f}\n")


def main(argv: list[str] | None = None) -> int:
    """Run `parse` (stdin JSON lines → stdout JSON lines) or `stats` (metrics of the log's `llm.attempt` events)."""
    parser = argparse.ArgumentParser(prog="geogate llm", description="The LLM host: debug extraction, read metrics.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("parse", help='stdin lines {"text", "tools"} → stdout lines {"format", "calls", "errors", …}')
    stats = commands.add_parser("stats", help="first-attempt success by model and format, retries, errors, tokens")
    stats.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ns = parser.parse_args(argv)
    if ns.command == "parse":
        return parse_lines(sys.stdin, sys.stdout)
    result = attempt_stats(read_attempts(EventStore.from_settings(process_settings())))
    if ns.json:
        sys.stdout.write(result.model_dump_json() + "\n")
    else:
        render(result, sys.stdout)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SettingsError as exc:  # no Redis URL for `stats`: the message, no trace
        raise SystemExit(str(exc)) from None
