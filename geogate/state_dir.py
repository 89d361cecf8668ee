"""Where `geogate dev` keeps its own state (Redis data, logs, `run.json`) when `GEOGATE_DATA_DIR` is unset."""

import hashlib
import os
import tempfile
from pathlib import Path


def default_data_dir(cwd: Path | None = None) -> Path:
    """`$XDG_STATE_HOME/geogate/<folder>-<hash>` (`~/.local/state` when XDG_STATE_HOME is unset) for the current
    folder `cwd`: one per project folder, as `.geogate` was, but outside the default workspace (`.`)."""
    folder = (cwd or Path.cwd()).resolve()
    state = os.environ.get("XDG_STATE_HOME", "")
    if not Path(state).is_absolute():  # unset or relative: the XDG spec says to ignore it
        try:
            state = str(Path.home() / ".local" / "state")
        except RuntimeError:  # no home directory to be found
            state = tempfile.gettempdir()
    digest = hashlib.sha256(os.fsencode(folder)).hexdigest()[:12]
    return Path(state) / "geogate" / f"{folder.name or 'root'}-{digest}"
