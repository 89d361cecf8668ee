"""What tiled calls leave in the workspace when their fan-in never cleaned up (its node died after the outcome, or
the call failed before any fan-in ran, or a tile of a cancelled call put its part after the call's parts were
removed): parts folders of calls that have ended, or that the log no longer knows, removed by the worker node's
retention pass; in an object root, the objects under such a call's prefix."""

import logging
import time
from pathlib import Path

from geogate.calls.store import EventStore
from geogate.objects import ObjectRoot, split_workspaces
from workers.tiling import part_objects
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


def sweep_objects(store: EventStore, workspaces: str, *, now: float | None = None) -> list[str]:
    """Remove the parts of ended or unknown calls under every `s3://` root of `workspaces` (`GEOGATE_WORKSPACES`),
    those whose newest part is younger than `GRACE_S` left alone; returns the prefixes removed.

    Raises:
        JobFailed: `storage.failed` (the store could not be listed; the next pass retries).
    """
    removed = []
    for root in (e for e in split_workspaces(workspaces) if isinstance(e, ObjectRoot)):
        for folder, newest in part_objects.call_folders(root, PARTS).items():
            if (now or time.time()) - newest.timestamp() < GRACE_S:
                continue
            state = store.call_state(folder.rsplit("/", 1)[1])
            if state is None or state.terminal:
                part_objects.remove(folder)
                removed.append(folder)
    if removed:
        logger.info("retention: removed the parts of %d tiled call(s) from object storage", len(removed))
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
