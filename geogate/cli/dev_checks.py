"""What `geogate dev` settles before it starts or prints anything: its workspace, a free port, a data directory of
its own."""

import errno
import os
import socket
from pathlib import Path

from geogate.cli.local import alive, recorded, run_file
from geogate.settings import Settings

DEFAULT_WORKSPACE = "workspace"
"""`geogate dev`'s workspace when GEOGATE_WORKSPACES is unset: a folder of its own in the current directory (created),
so that what else the directory holds (a clone's docs and their PNGs) is not offered to tools as data."""


class CannotStart(SystemExit):
    """`geogate dev` cannot start as set up; the message names the setting to change."""


def with_default_workspace(settings: Settings, cwd: Path | None = None) -> Settings:
    """`settings` with `./workspace` (created) as the workspace when GEOGATE_WORKSPACES was not given."""
    if "workspaces" in settings.model_fields_set:
        return settings
    folder = (cwd or Path.cwd()) / DEFAULT_WORKSPACE
    folder.mkdir(exist_ok=True)
    return settings.model_copy(update={"workspaces": str(folder.resolve())})


def check_can_start(settings: Settings) -> None:
    """Raises `CannotStart` when the HTTP port is taken or another live `geogate dev` uses the data directory."""
    _check_data_dir(settings)
    _check_port(settings)


def _check_port(settings: Settings) -> None:
    with socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a closing socket is no owner
        try:
            sock.bind((settings.host, settings.port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise CannotStart(f"cannot listen on {settings.host}:{settings.port} ({exc.strerror})") from None
            raise CannotStart(
                f"port {settings.port} on {settings.host} is already in use: set GEOGATE_PORT (or `geogate dev "
                "--port N`) to a free port. A second `geogate dev` from the same folder also needs its own "
                "GEOGATE_DATA_DIR."
            ) from None


def _check_data_dir(settings: Settings) -> None:
    run = recorded(settings)
    if run is None or run.pid == os.getpid() or not alive(run.pid):
        return
    raise CannotStart(
        f"another `geogate dev` (pid {run.pid}, {run.mcp_url}) uses the data directory {settings.data_dir} "
        f"({run_file(settings)}): stop it, or give this one its own GEOGATE_DATA_DIR and GEOGATE_PORT."
    )
