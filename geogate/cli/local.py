"""Finding the running system: `geogate dev` records where it runs under its data dir; other commands read it there.

With `make run` in one terminal, `geogate events tail` or `geogate status` in another (same directory, REDIS_URL
unset) use the Redis that `geogate dev` started, and say so.
"""

import json
import os
import sys
from pathlib import Path

from pydantic import BaseModel, ValidationError

from geogate.eventlog.redaction import redact_text
from geogate.settings import Settings, SettingsError

RUN_FILE = "run.json"


class LocalRun(BaseModel):
    """What a running `geogate dev` tells the other commands."""

    redis_url: str
    mcp_url: str
    ops_url: str
    pid: int


def run_file(settings: Settings) -> Path:
    return settings.data_dir / RUN_FILE


def record(settings: Settings, run: LocalRun) -> Path:
    """Write `run` (atomically: a half-written file is never read)."""
    path = run_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(run.model_dump_json(indent=2))
    tmp.replace(path)
    return path


def forget(settings: Settings) -> None:
    """Remove the record if it is this process's own (a second `geogate dev` may have replaced it)."""
    found = recorded(settings)
    if found is not None and found.pid == os.getpid():
        run_file(settings).unlink(missing_ok=True)


def recorded(settings: Settings) -> LocalRun | None:
    try:
        return LocalRun.model_validate_json(run_file(settings).read_text())
    except (OSError, ValidationError, json.JSONDecodeError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def resolve(settings: Settings, quiet: bool = False) -> Settings:
    """`settings` with a Redis URL: REDIS_URL when set, else the one `geogate dev` recorded; says which on stderr.

    Raises:
        SettingsError: neither is there (or the recording `geogate dev` is gone), with what to do about it.
    """
    if settings.redis_url:
        _say(quiet, f"using Redis {settings.redis_url} (from REDIS_URL)")
        return settings
    run = recorded(settings)
    if run is None:
        raise SettingsError(
            f"REDIS_URL is not set and no `geogate dev` runs from this directory ({run_file(settings)} is missing); "
            "start one with `make run`, or set REDIS_URL"
        )
    if not alive(run.pid):
        raise SettingsError(f"`geogate dev` (pid {run.pid}) recorded in {run_file(settings)} is gone; start `make run`")
    _say(quiet, f"using Redis {run.redis_url} (started by `geogate dev`, pid {run.pid}; see {run_file(settings)})")
    return settings.model_copy(update={"redis_url": run.redis_url})


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"geogate: {redact_text(text)}", file=sys.stderr)  # a password in the Redis URL stays off the terminal
