"""`geogate dev` settles its port, data directory and workspace before it starts or prints anything."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from geogate.cli import dev
from geogate.cli.local import LocalRun, record
from geogate.settings import Settings
from tests.support import free_port


def test_a_busy_port_stops_geogate_dev_before_it_prints_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = Settings(port=taken.getsockname()[1], data_dir=tmp_path / "data", workspaces=str(tmp_path))

        with pytest.raises(SystemExit) as info:
            dev.run_dev(settings, workers=1)

    said = str(info.value.code)
    assert f"port {settings.port}" in said and "GEOGATE_PORT" in said and "GEOGATE_DATA_DIR" in said
    assert capsys.readouterr().out == ""
    assert not (tmp_path / "data").exists()  # nothing started


def test_a_second_geogate_dev_on_the_same_data_directory_is_told_to_take_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        settings = Settings(data_dir=tmp_path, workspaces=str(tmp_path), port=free_port())
        urls = {"redis_url": "redis://127.0.0.1:1/0", "mcp_url": "http://h/mcp", "ops_url": "http://h/ops"}
        record(settings, LocalRun(pid=first.pid, **urls))

        with pytest.raises(SystemExit) as info:
            dev.run_dev(settings, workers=1)
    finally:
        first.kill()
        first.wait()
    said = str(info.value.code)
    assert f"pid {first.pid}" in said and "GEOGATE_DATA_DIR" in said and str(tmp_path) in said
    assert capsys.readouterr().out == ""


def test_without_geogate_workspaces_dev_works_in_a_workspace_folder_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GEOGATE_WORKSPACES", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()  # a clone's other folders are not the workspace

    settings = dev.with_default_workspace(Settings(data_dir=tmp_path / "data"))
    dev._announce(settings, "redis://127.0.0.1:1/0", workers=1)

    assert settings.workspace_roots() == [(tmp_path / "workspace").resolve()]
    assert (tmp_path / "workspace").is_dir()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Geogate is up")
    assert f"Workspace {(tmp_path / 'workspace').resolve()}" in lines[1] and "GEOGATE_WORKSPACES" in lines[1]


def test_a_workspace_that_is_set_is_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, workspaces=str(tmp_path))

    assert dev.with_default_workspace(settings, cwd=tmp_path).workspace_roots() == [tmp_path.resolve()]
    assert not (tmp_path / "workspace").exists()
