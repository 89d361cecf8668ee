"""The interpreter handlers run on: it must import its whole standard library, or a worker refuses to start."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.sandbox import PythonSandbox, SandboxConfig, SandboxUnavailable, detect
from workers.sandbox.isolation import default_python, require_interpreter

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def python_without_json() -> Iterator[Path]:
    """The default interpreter with a standard library that lacks `json` (as Debian's python3.X-minimal alone is),
    in a folder any uid can read: the binary copied, every other stdlib entry linked."""
    python = Path(default_python()).resolve()
    stdlib = subprocess.run(
        [python, "-I", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="geogate-nojson-"))
    folder.chmod(0o755)
    (folder / "bin").mkdir()
    shutil.copy2(python, folder / "bin" / python.name)
    lib = folder / "lib" / Path(stdlib).name
    lib.mkdir(parents=True)
    for entry in Path(stdlib).iterdir():
        if entry.name != "json":
            (lib / entry.name).symlink_to(entry)
    yield folder / "bin" / python.name
    shutil.rmtree(folder)


def test_the_default_interpreter_runs_a_handler_that_imports_json() -> None:
    config = SandboxConfig()
    require_interpreter(config)
    box = PythonSandbox(config)
    try:
        outcome = box.run("import json\njson.dumps({'width': tool_output['width'] * 2})", {"width": 256})
    finally:
        box.close()

    assert outcome.error is None, outcome.error
    assert outcome.value == '{"width": 512}'


def test_an_interpreter_without_json_is_refused_naming_it_and_the_missing_module(python_without_json: Path) -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        require_interpreter(SandboxConfig(python=str(python_without_json), run_as=None))

    assert refused.value.code == "sandbox.unavailable"
    assert str(python_without_json) in refused.value.message and "'json'" in refused.value.message


def test_an_interpreter_the_sandbox_uid_cannot_run_is_refused(tmp_path: Path) -> None:
    """A worker started as root runs the sandbox as nobody: an interpreter in root's home is out of its reach."""
    if os.geteuid() != 0:
        python = tmp_path / "python3"  # not executable by anyone: the same refusal without root
        python.write_text("")
    else:
        tmp_path.chmod(0o700)
        python = tmp_path / "python3"
        shutil.copy2(Path(default_python()).resolve(), python)

    with pytest.raises(SandboxUnavailable) as refused:
        require_interpreter(SandboxConfig(python=str(python)))

    assert str(python) in refused.value.message


def test_a_worker_whose_handler_interpreter_lacks_json_refuses_to_start_and_says_why(
    python_without_json: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEOGATE_")}
    env |= {"GEOGATE_SANDBOX_PYTHON": str(python_without_json), "REDIS_URL": "redis://127.0.0.1:9/0"}
    env |= {"PYTHONPATH": str(ROOT)}

    done = subprocess.run(
        [sys.executable, "-m", "workers", "--queues", "gdal"], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip

    assert done.returncode != 0
    assert "geogate worker refuses to start" in done.stderr
    assert str(python_without_json) in done.stderr and "'json'" in done.stderr


def test_a_sandbox_that_cannot_start_is_refused_with_bubblewraps_own_reason() -> None:
    detect.cache_clear()
    with pytest.raises(SandboxUnavailable) as refused:
        detect(SandboxConfig(python="/nonexistent/python3", run_as=None))
    detect.cache_clear()

    assert "bwrap: " in refused.value.message and "/nonexistent/python3" in refused.value.message
