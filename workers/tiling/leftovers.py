"""What tiled calls leave in the workspace when their fan-in never cleaned up (its node died after the outcome, or
the call failed before any fan-in ran): parts folders of calls that have ended, or that the log no longer knows,
removed by the worker node's retention pass."""

import logging
import time
from pathlib import Path

from geogate.calls.store import EventStore
from workers.tiling.grid import PARTS, remove_parts

logger = logging.getLogger(__name__)

GRACE_S = 60.0
"""A folder younger than this is left alone whatever the log says (its call may not have been appended yet)."""


def sweep(store: EventStore, roots: list[Path], *, now: float | None = None) -> list[Path]:
    """Remove the parts folders of ended or unknown calls under every workspace root; returns what was removed."""
    removed = []
    for folder in _folders(roots):
        if _young(folder, now or time.time()):
            continue
        state = store.call_state(folder.name)
        if state is None or state.terminal:
            remove_parts(folder)
            removed.append(folder)
    if removed:
        logger.info("retention: removed %d leftover parts folder(s) of tiled calls", len(removed))
    return removed


def _folders(roots: list[Path]) -> list[Path]:
    return [
        folder for root in roots if (root / PARTS).is_dir() for folder in (root / PARTS).iterdir() if folder.is_dir()
    ]


def _young(folder: Path, now: float) -> bool:
    try:
        return now - folder.stat().st_mtime < GRACE_S
    except FileNotFoundError:
        return True
