"""The retention pass removes what tiled calls left in the workspace, and nothing a running call still needs."""

import os
import time
from pathlib import Path

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from schemas.events import ToolFailed
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from tests.support import make_event
from workers.tiling.grid import PARTS
from workers.tiling.leftovers import GRACE_S, sweep


def requested(store: EventStore) -> str:
    call_id = new_id()
    args = {"uri": "a.tif", "output": "b.tif", "dst_crs": "EPSG:3857", "resampling": "nearest"}
    store.append(
        request_event(TOOLS["raster_reproject"], args, call_id=call_id, actor="t"), keys.requested_key(call_id)
    )
    return call_id


def parts_of(root: Path, call_id: str, age_s: float) -> Path:
    folder = root / PARTS / call_id
    folder.mkdir(parents=True)
    (folder / "staging.tif").write_bytes(b"part")
    then = time.time() - age_s
    os.utime(folder, (then, then))
    return folder


def test_parts_of_ended_and_unknown_calls_go_and_those_of_running_or_young_calls_stay(
    fake_store: EventStore, tmp_path: Path
) -> None:
    ended, running = requested(fake_store), requested(fake_store)
    failed = ToolFailed(call_id=ended, code="tile.failed", message="tile 3 failed")
    fake_store.append(make_event(call_aggregate(ended), failed), keys.outcome_key(ended))
    old = GRACE_S * 2
    folders = {
        "ended": parts_of(tmp_path, ended, old),
        "running": parts_of(tmp_path, running, old),
        "unknown": parts_of(tmp_path, new_id(), old),
        "young": parts_of(tmp_path, new_id(), 0),
    }

    removed = sweep(fake_store, [tmp_path])

    assert sorted(removed) == sorted([folders["ended"], folders["unknown"]])
    assert {name for name, folder in folders.items() if folder.exists()} == {"running", "young"}
