"""The `geogate` command: dev (everything on one machine), gateway, worker, replay, trim, events tail, status.

The roles run as their own packages do, each in a process of its own: `python -m gateway` (`gateway`, and what
`events tail` and `status` show, which is `/ops`'s), `python -m workers` (`worker`, `llm`). This command resolves the
Redis URL (REDIS_URL, or the one a `geogate dev` in this directory recorded) and passes it on."""

import os
import sys
from typing import Annotated

import typer

from geogate.cli.justifications import app as justifications_app
from geogate.settings import Settings, SettingsError, process_settings

app = typer.Typer(help="Geogate: an event-sourced MCP gateway for geospatial work.", no_args_is_help=True)
events_app = typer.Typer(help="Read the event log.", no_args_is_help=True)
app.add_typer(events_app, name="events")
app.add_typer(justifications_app, name="justifications")


def _settings(**overrides: object) -> Settings:
    settings = process_settings()
    updates = {k: v for k, v in overrides.items() if v is not None}
    return settings.model_copy(update=updates) if updates else settings


def _connected(**overrides: object) -> Settings:
    """Settings with a Redis URL: REDIS_URL, else the one a `geogate dev` in this directory recorded (says which)."""
    from geogate.cli.local import resolve

    return resolve(_settings(**overrides))


def _export_redis_url() -> None:
    """For commands that run another process that reads REDIS_URL itself."""
    os.environ["REDIS_URL"] = _connected().require_redis_url()


def _run_module(module: str, args: list[str]) -> None:
    """Become `python -m <module> <args>`: the role's own entry point, in this process."""
    os.execv(sys.executable, [sys.executable, "-m", module, *args])


@app.command()
def dev(
    port: Annotated[int | None, typer.Option(help="HTTP port of the MCP endpoint")] = None,
    host: Annotated[str | None, typer.Option(help="interface to bind")] = None,
    workers: Annotated[int, typer.Option(min=1, help="worker processes")] = 2,
) -> None:
    """Run everything on this machine: a private Redis (unless REDIS_URL is set), workers and the gateway."""
    from geogate.cli.dev import run_dev

    run_dev(_settings(port=port, host=host), workers)


@app.command()
def gateway(
    stdio: Annotated[bool, typer.Option("--stdio", help="serve MCP on stdin/stdout (desktop hosts)")] = False,
    port: Annotated[int | None, typer.Option(help="HTTP port")] = None,
    host: Annotated[str | None, typer.Option(help="interface to bind")] = None,
) -> None:
    """Run the gateway role (REDIS_URL, or the Redis of a `geogate dev` running from this directory)."""
    _export_redis_url()
    args = ["--stdio"] if stdio else []
    args += ["--port", str(port)] if port is not None else []
    args += ["--host", host] if host is not None else []
    _run_module("gateway", args)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def worker(ctx: typer.Context) -> None:
    """Run a worker role (needs REDIS_URL): `geogate worker --queues gdal,sandbox [--concurrency N]`."""
    _export_redis_url()
    _run_module("workers", ctx.args)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True}, add_help_option=False)
def llm(ctx: typer.Context) -> None:
    """The LLM host: `geogate llm parse` (JSON lines on stdin → calls found), `geogate llm stats` (from the log)."""
    if ctx.args[:1] == ["stats"]:
        _export_redis_url()
    _run_module("workers.llm", ctx.args)


@app.command()
def replay(
    check: Annotated[bool, typer.Option("--check", help="compare only; leave the live projections alone")] = False,
) -> None:
    """Rebuild every projection from the log alone and compare it with the live one (progress on standard error)."""
    from geogate.calls.store import EventStore
    from geogate.cli.replay_progress import ReplayProgress
    from geogate.eventlog.replay import replay as run_replay

    store = EventStore.from_settings(_connected())
    with ReplayProgress() as progress:
        report = run_replay(store, swap=not check, progress=progress)
    typer.echo(f"replayed {report.events} events into {report.keys} projection keys")
    for label, keys in (("missing", report.missing_live), ("extra", report.extra_live), ("differ", report.different)):
        for key in keys[:20]:
            typer.echo(f"  {label}: {key}")
    typer.echo("rebuilt projections are identical to the live ones" if report.identical else "differences found")
    if check and not report.identical:
        raise typer.Exit(1)


@app.command()
def trim() -> None:
    """A retention pass now (GEOGATE_RETENTION_MAX_AGE_S / _MAXLEN): snapshot what goes, then trim, never past a
    live reader's checkpoint."""
    from geogate.calls.store import EventStore
    from geogate.eventlog.retention import trim as run_trim

    settings = _connected()
    store = EventStore.from_settings(settings)
    for stream, removed in run_trim(store, settings.retention).items():
        typer.echo(f"{stream}: removed {removed}")


@events_app.command("tail")
def events_tail(
    type_: Annotated[str | None, typer.Option("--type", help="glob on the event type, e.g. 'tool.*'")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing new events")] = False,
    json_lines: Annotated[bool, typer.Option("--json", help="one JSON object a line")] = False,
    count: Annotated[int, typer.Option("--count", "-n", help="how many recent events first (0: the whole log)")] = 20,
) -> None:
    """Print recent events, coloured for people or as JSON lines for scripts."""
    _export_redis_url()
    args = [*(["--type", type_] if type_ is not None else []), "--count", str(count)]
    args += [*(["--follow"] if follow else []), *(["--json"] if json_lines else [])]
    _run_module("gateway.ops.tail", args)


@app.command()
def status(
    window: Annotated[str, typer.Option(help="5m, 1h or all")] = "1h",
    json_out: Annotated[bool, typer.Option("--json", help="the summary as JSON, as /ops/api/summary")] = False,
) -> None:
    """Workers, queues, lag, throughput, latency and errors: the figures of /ops, in the terminal."""
    _export_redis_url()
    _run_module("gateway.ops.status", ["--window", window, *(["--json"] if json_out else [])])


def main() -> None:
    """The `geogate` command; a settings error ends it with its message (no trace) and status 1."""
    try:
        app()
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    main()
