"""The Makefile's targets, read through `make --dry-run` (it prints every command and runs none)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str) -> str:
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is not installed: the Makefile cannot be checked")
    done = subprocess.run(
        [make, "--dry-run", "--always-make", "-C", str(ROOT), target], capture_output=True, text=True, check=True
    )
    return done.stdout


def installs(commands: str) -> list[str]:
    return re.findall(r"pip install -q -e (\S+)", commands)


def test_make_run_installs_only_what_running_needs() -> None:
    commands = planned("run")
    assert installs(commands) == ["."], installs(commands)
    assert "chromium" not in commands and "wrk" not in commands


def test_make_test_installs_the_test_and_docs_extras() -> None:
    commands = planned("test")
    assert '".[test,docs]"' in installs(commands)
    assert "chromium" in commands and "wrk" in commands
