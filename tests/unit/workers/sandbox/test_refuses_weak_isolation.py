"""Issue 14: without bubblewrap (or without seccomp) Python handlers are refused, unless explicitly allowed."""

import os
from pathlib import Path

import pytest

from workers.sandbox import SandboxConfig, SandboxUnavailable, detect
from workers.sandbox.isolation import require_seccomp


@pytest.fixture
def only_unshare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH where `unshare` exists and `bwrap` does not (a host without bubblewrap)."""
    for name in ("unshare",):
        for folder in os.environ["PATH"].split(":"):
            if (found := Path(folder) / name).exists():
                (tmp_path / name).symlink_to(found)
                break
    monkeypatch.setenv("PATH", str(tmp_path))
    detect.cache_clear()
    yield
    detect.cache_clear()


def test_without_bwrap_python_handlers_are_refused_with_a_clear_error(only_unshare: None) -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        detect(SandboxConfig())

    assert "bubblewrap" in refused.value.message and "GEOGATE_SANDBOX_ALLOW_WEAK" in refused.value.message


def test_the_weaker_unshare_sandbox_runs_only_when_allowed(only_unshare: None) -> None:
    assert detect(SandboxConfig(allow_weak=True, run_as=None)) == "unshare"  # the PATH folder is root's


@pytest.mark.parametrize("isolation", ["unshare", "process"])
def test_naming_a_weaker_isolation_is_not_enough_without_the_setting(isolation: str) -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        detect(SandboxConfig(isolation=isolation))  # type: ignore[arg-type]

    assert "weaker than bubblewrap" in refused.value.message


def test_a_sandbox_without_seccomp_is_refused_unless_allowed() -> None:
    with pytest.raises(SandboxUnavailable) as refused:
        require_seccomp(SandboxConfig(), seccomp=False)

    assert "libseccomp" in refused.value.message
    require_seccomp(SandboxConfig(allow_weak=True), seccomp=False)  # the explicit setting accepts it
