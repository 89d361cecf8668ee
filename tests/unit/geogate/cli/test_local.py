"""Commands find the Redis that `geogate dev` started from the same directory, and say which Redis they use."""

import os
from pathlib import Path

import pytest

from geogate.cli.local import LocalRun, forget, record, resolve
from geogate.settings import Settings, SettingsError


def run(pid: int) -> LocalRun:
    return LocalRun(redis_url="redis://127.0.0.1:4321/0", mcp_url="http://x/mcp", ops_url="http://x/ops", pid=pid)


def test_without_redis_url_the_recorded_dev_redis_is_used_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=tmp_path)
    record(settings, run(os.getpid()))

    assert resolve(settings).redis_url == "redis://127.0.0.1:4321/0"
    assert "redis://127.0.0.1:4321/0" in capsys.readouterr().err


def test_redis_url_wins_over_the_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(data_dir=tmp_path, redis_url="redis://elsewhere:1/0")
    record(settings, run(os.getpid()))

    assert resolve(settings).redis_url == "redis://elsewhere:1/0"
    assert "from REDIS_URL" in capsys.readouterr().err


def test_the_redis_named_on_the_terminal_shows_no_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(data_dir=tmp_path, redis_url="redis://geo:hunter2hunter2@db.example:6379/0")

    assert resolve(settings).redis_url == "redis://geo:hunter2hunter2@db.example:6379/0"  # used as given
    said = capsys.readouterr().err
    assert "redis://geo:[redacted]@db.example:6379/0" in said and "hunter2" not in said


def test_no_record_and_no_redis_url_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as exc:
        resolve(Settings(data_dir=tmp_path))
    assert "make run" in str(exc.value)


def test_a_record_left_by_a_dead_dev_is_refused(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    record(settings, run(2**22 + 12345))  # above pid_max on Linux: no such process
    with pytest.raises(SettingsError) as exc:
        resolve(settings)
    assert "is gone" in str(exc.value)


def test_dev_forgets_only_its_own_record(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    record(settings, run(os.getpid() + 1))
    forget(settings)
    assert (tmp_path / "run.json").exists()
    record(settings, run(os.getpid()))
    forget(settings)
    assert not (tmp_path / "run.json").exists()
