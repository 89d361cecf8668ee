"""Which isolation this host can give a handler, probed once, and the command line that starts the sandbox."""

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from geogate.settings import SecuritySettings
from schemas.result_handlers import Isolation
from workers.sandbox.bootstrap import required_modules
from workers.sandbox.errors import SandboxUnavailable

IsolationChoice = Literal["auto", "bwrap", "unshare", "process"]
NOBODY = 65534
_SYSTEM_INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")
_ROOT_LINKS = ("bin", "lib", "lib32", "lib64", "sbin")
WEAK_HINT = "set GEOGATE_SANDBOX_ALLOW_WEAK=1 to run handlers in a weaker sandbox anyway"


def default_python() -> str:
    """The interpreter run inside the sandbox: a system Python under /usr (readable by an unprivileged uid, bound
    read-only into the sandbox). The one this process runs on when it is one (a virtualenv's base: Debian's python3 in
    the image), else the system's python3, else this process's own."""
    own = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    if own.startswith("/usr/"):
        return own
    for candidate in _SYSTEM_INTERPRETERS:
        if os.access(candidate, os.X_OK):
            return candidate
    return own


@dataclass(frozen=True)
class SandboxConfig:
    """How to build the sandbox. Read once at the worker's entry point and passed down.

    Attributes:
        isolation: `auto` uses bwrap; `unshare` (the host filesystem stays visible) and `process` (rlimits, seccomp
            and the audit hook, no namespaces) run only with `allow_weak`, asked for by name or as `auto`'s fallback.
        python: the interpreter inside the sandbox: its whole standard library, nothing else.
        run_as: unprivileged host uid/gid the sandbox runs as when the worker is root (None keeps root).
        audit_hook: refuse forbidden operations by audit event too, for clearer errors (the kernel holds anyway).
        startup_timeout_s: how long the server may take to say it is ready.
    """

    isolation: IsolationChoice = "auto"
    allow_weak: bool = False
    """Accept isolation weaker than bubblewrap with seccomp (`GEOGATE_SANDBOX_ALLOW_WEAK`); refused otherwise."""
    python: str = field(default_factory=default_python)
    run_as: int | None = NOBODY
    audit_hook: bool = True
    startup_timeout_s: float = 10.0

    def drop_to(self) -> int | None:
        """The uid to switch to before starting the sandbox, if any."""
        return self.run_as if self.run_as is not None and os.geteuid() == 0 else None


def config_for(security: SecuritySettings) -> SandboxConfig:
    """The sandbox a worker's settings ask for (`GEOGATE_SANDBOX_ALLOW_WEAK`, `GEOGATE_SANDBOX_PYTHON`)."""
    python = str(security.sandbox_python) if security.sandbox_python is not None else default_python()
    return SandboxConfig(allow_weak=security.sandbox_allow_weak, python=python)


def require_interpreter(config: SandboxConfig) -> None:
    """Check that the sandbox's interpreter, run as the sandbox's uid, imports every module a handler needs.

    Raises:
        SandboxUnavailable: naming the interpreter and what it could not do.
    """
    uid = config.drop_to()
    ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    argv = [config.python, "-I", "-S", "-B", "-c", f"import {', '.join(required_modules())}"]
    try:
        done = subprocess.run(argv, env={}, cwd="/", capture_output=True, timeout=config.startup_timeout_s, **ids)
    except (OSError, subprocess.SubprocessError) as exc:
        who = f"uid {uid}" if uid is not None else "this worker"
        reason = f"does not run as {who} ({exc}): it must be readable and executable by {who}"
    else:
        if done.returncode == 0:
            return
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        reason = (
            f"fails to import its standard library ({lines[-1] if lines else f'exit {done.returncode}'}): it needs "
            "all of it (Debian: the python3 package, not python3-minimal alone)"
        )
    raise SandboxUnavailable(
        f"Python result handlers cannot run: the sandbox's interpreter {config.python} {reason}. Install one, or set "
        "GEOGATE_SANDBOX_PYTHON to one that can"
    )


def _root_entries() -> list[str]:
    args: list[str] = []
    for name in _ROOT_LINKS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


def bwrap_prefix(python: str) -> list[str]:
    """bwrap arguments: every namespace, no user namespaces inside, caps dropped, a read-only /usr and nothing else."""
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--assert-userns-disabled"]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv", "--hostname", "sandbox"]
    args += ["--ro-bind", "/usr", "/usr", *_root_entries(), "--proc", "/proc", "--dev", "/dev", "--chdir", "/"]
    prefix = Path(python).resolve().parent.parent
    if not prefix.is_relative_to("/usr"):
        args += ["--ro-bind", str(prefix), str(prefix)]
    return args


def unshare_prefix() -> list[str]:
    """unshare arguments: new user, net, pid, ipc, uts and mount namespaces; the host filesystem stays visible."""
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--user", "--map-current-user", "--net", "--pid", "--ipc", "--uts", "--mount", "--fork"]


def command(isolation: Isolation, python: str, program: str) -> list[str]:
    """The argv that starts `program` (a `-c` script) under the given isolation."""
    interpreter = [python, "-I", "-S", "-B", "-c", program]
    if isolation == "bwrap":
        return bwrap_prefix(python) + interpreter
    if isolation == "unshare":
        return [*unshare_prefix(), "--kill-child", "--mount-proc", *interpreter]
    return interpreter


def _failure(isolation: Isolation, config: SandboxConfig) -> str | None:
    """Why `isolation` cannot start a trivial program here (its own last words), or None when it can."""
    argv = command(isolation, config.python, "pass")
    if shutil.which(argv[0]) is None:
        return f"{argv[0]} is not installed"
    uid = config.drop_to()
    ids = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    try:
        done = subprocess.run(argv, env={}, cwd="/", capture_output=True, timeout=config.startup_timeout_s, **ids)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


@cache
def detect(config: SandboxConfig) -> Isolation:
    """Probe the strongest isolation available for `config` (cached per process).

    Raises:
        SandboxUnavailable: neither bwrap nor unshare can create namespaces here and `process` was not asked for;
            the message carries bubblewrap's own reason.
    """
    if config.isolation not in ("auto", "bwrap") and not config.allow_weak:
        raise SandboxUnavailable(f"isolation {config.isolation!r} is weaker than bubblewrap; {WEAK_HINT}")
    if config.isolation != "auto":
        if (failure := _failure(config.isolation, config)) is not None:
            raise SandboxUnavailable(f"isolation {config.isolation!r} does not work on this host: {failure}")
        return config.isolation
    failures = {}
    for isolation in ("bwrap", "unshare") if config.allow_weak else ("bwrap",):
        if (failure := _failure(isolation, config)) is None:
            return isolation
        failures[isolation] = failure
    raise SandboxUnavailable(
        "Python result handlers are refused: bubblewrap (bwrap) is missing or cannot create namespaces here "
        f"({failures['bwrap']}). Install bubblewrap (in a container: see docs/compose.md's security_opt), or "
        f"{WEAK_HINT}"
    )


def require_seccomp(config: SandboxConfig, seccomp: bool) -> None:
    """Refuse a sandbox server whose seccomp filter could not be built (libseccomp missing), unless allowed.

    Raises:
        SandboxUnavailable: naming libseccomp and the setting that accepts the weaker sandbox.
    """
    if not seccomp and not config.allow_weak:
        raise SandboxUnavailable(
            f"Python result handlers are refused: libseccomp (libseccomp2) is missing in the sandbox. {WEAK_HINT}"
        )
