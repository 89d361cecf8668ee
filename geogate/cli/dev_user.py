"""Which user `geogate dev` runs its worker processes as when it was started as root.

Jobs read files that clients name, with GDAL's many drivers: a worker that runs as root can read anything a driver
can be made to open. Started as root, `geogate dev` runs its workers as `GEOGATE_WORKER_USER`, by default the owner
of the first workspace root when that is not root (the user whose files they are), else `nobody`. The user must be
able to start the worker (run this Python and import its packages) and to write in every workspace root (and in its
`.geogate/tiles`, where tiled calls leave their parts); a probe run as that user (`python -m workers.run.probe`) checks
both before any worker starts.
When it cannot, the workers run as root and `geogate dev` says why; a user named by the setting that cannot is an
error instead. Redis and the gateway stay with the user who started `geogate dev`.
"""

import os
import pwd
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from geogate.settings import Settings, SettingsError

PARTS = Path(".geogate") / "tiles"
"""Below a workspace root, where tiled calls leave their parts (`workers.tiling.grid.PARTS`)."""

PROBE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class WorkerUser:
    """A user to run worker processes as (`subprocess.Popen(user=…, group=…, extra_groups=[])`, `env=environ(…)`)."""

    name: str
    uid: int
    gid: int
    home: str

    def environ(self, env: dict[str, str]) -> dict[str, str]:
        """`env` for this user's processes: its own home (caches, config) instead of ours."""
        return {**env, "HOME": self.home}


def candidate(settings: Settings) -> WorkerUser:
    """The user the setting names, else the first workspace root's owner unless root, else `nobody`.

    Raises:
        SettingsError: `GEOGATE_WORKER_USER` names no user of this machine.
    """
    if settings.worker_user:
        try:
            entry = pwd.getpwnam(settings.worker_user)
        except KeyError:
            raise SettingsError(f"GEOGATE_WORKER_USER: no user {settings.worker_user!r} on this machine") from None
        return WorkerUser(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)
    roots = settings.workspace_roots()
    owner = roots[0].stat().st_uid if roots and roots[0].exists() else 0
    entry = pwd.getpwuid(owner) if owner else pwd.getpwnam("nobody")
    return WorkerUser(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def probe(user: WorkerUser, folders: list[Path], env: dict[str, str]) -> str | None:
    """Why `user` cannot run a worker over `folders`; None when it can."""
    argv = [sys.executable, "-m", "workers.run.probe", *(str(f) for f in folders)]  # `workers/run/probe.py`
    try:
        done = subprocess.run(
            argv,
            env=user.environ(env),
            cwd="/",
            user=user.uid,
            group=user.gid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{user.name} cannot start {sys.executable} ({exc})"
    if done.returncode == 0:
        return None
    if done.returncode == 3:
        return f"{user.name} {done.stdout.strip()}"
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return f"{user.name} cannot start a worker with {sys.executable}: {last}"


def writable_folders(settings: Settings, user: WorkerUser) -> list[Path]:
    """Where workers write: every workspace root, and its `.geogate/tiles` where tiled calls leave their parts.

    A `.geogate` that is there already (with the default data directory, `geogate dev`'s own, owned by root) gets
    its `tiles` folder made for `user`, the only part of it the workers write in.
    """
    roots = settings.workspace_roots()
    parts = [root / PARTS for root in roots if (root / PARTS.parent).is_dir()]
    for folder in parts:
        if not folder.exists():
            folder.mkdir()
            os.chown(folder, user.uid, user.gid)
    return [*roots, *parts]


def worker_user(settings: Settings, env: dict[str, str]) -> WorkerUser | None:
    """The user to run the workers as; None when they keep ours (not root, or no user can: said on stderr).

    Raises:
        SettingsError: `GEOGATE_WORKER_USER` names a user that cannot run them.
    """
    if os.geteuid() != 0:
        return None
    user = candidate(settings)
    reason = probe(user, writable_folders(settings, user), env)
    if reason is None:
        return user
    if settings.worker_user:
        raise SettingsError(f"GEOGATE_WORKER_USER: {reason}")
    print(
        f"geogate dev runs as root, and so will its workers: {reason}. Set GEOGATE_WORKER_USER to a user who can "
        "(and owns the workspace), or start geogate dev as that user.",
        file=sys.stderr,
    )
    return None
