"""Which user `geogate dev` started as root runs its workers as (`geogate.cli.dev_user`); these tests run as root."""

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from geogate.cli.dev_user import PARTS, candidate, worker_user
from geogate.settings import Settings, SettingsError

NOBODY = pwd.getpwnam("nobody")


@pytest.fixture
def root_owned() -> Iterator[Path]:
    """A workspace of root's that others can read and not write, with `geogate dev`'s data directory in it."""
    folder = Path(tempfile.mkdtemp(prefix="geogate-root-"))
    folder.chmod(0o755)
    (folder / ".geogate").mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_workers_run_as_the_owner_of_the_workspace_or_else_nobody(root_owned: Path) -> None:
    assert candidate(Settings(workspaces=str(root_owned))).name == "nobody"
    shutil.chown(root_owned, NOBODY.pw_uid, NOBODY.pw_gid)
    assert candidate(Settings(workspaces=str(root_owned))).uid == NOBODY.pw_uid
    assert candidate(Settings(workspaces=str(root_owned), worker_user="root")).uid == 0


def test_a_user_who_cannot_write_in_the_workspace_leaves_the_workers_root_and_says_why(
    root_owned: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert os.geteuid() == 0, "`geogate dev` picks a user only when started as root"

    assert worker_user(Settings(workspaces=str(root_owned)), dict(os.environ)) is None

    said = capsys.readouterr().err
    assert "runs as root, and so will its workers: nobody cannot" in said and "GEOGATE_WORKER_USER" in said
    assert (root_owned / PARTS).stat().st_uid == NOBODY.pw_uid  # where tiled calls leave parts is theirs


def test_a_worker_user_named_by_the_setting_who_cannot_run_them_is_an_error(root_owned: Path) -> None:
    with pytest.raises(SettingsError):
        worker_user(Settings(workspaces=str(root_owned), worker_user="nobody"), dict(os.environ))
    with pytest.raises(SettingsError):
        worker_user(Settings(workspaces=str(root_owned), worker_user="no-such-user-here"), dict(os.environ))
