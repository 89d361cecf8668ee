"""Workers never need root: a pool process running as `nobody` runs a GDAL job on a real Redis and writes its output.

The job runs in a child of this process that drops to `nobody` (no supplementary group) after the fork, as a pool
process of a worker started by `geogate dev` as root would run (`geogate.cli.dev_user`). A first call, run here as root
before the fork, loads what the job imports: this machine's Python lives under `/root`, which `nobody` cannot read.
"""

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.ids import new_id
from schemas.tools import TOOLS
from workers.run.runner import run_call
from workers.tools import load_all

pytestmark = pytest.mark.integration

NOBODY = pwd.getpwnam("nobody")


def write_source(path: Path) -> None:
    profile = {"driver": "GTiff", "width": 64, "height": 32, "count": 1, "dtype": "float32", "crs": "EPSG:32633"}
    with rasterio.open(path, "w", transform=from_origin(500000, 4100000, 30, 30), **profile) as dst:
        dst.write(np.arange(64 * 32, dtype="float32").reshape(1, 32, 64))


def convert(store: EventStore, settings: Settings, output: str) -> str:
    """Publish a `raster_convert` of `src.tif` to `output`; its call id (the payload is run by `run_as_nobody`)."""
    call_id = new_id()
    event = request_event(TOOLS["raster_convert"], {"uri": "src.tif", "output": output}, call_id=call_id, actor="t")
    store.append(event, keys.requested_key(call_id))
    return call_id


def run_as_nobody(store: EventStore, settings: Settings, call_id: str) -> int:
    """Run the call in a child that is `nobody` from before the job starts; the child's exit status."""
    payload = encode(store.read_aggregate(f"call:{call_id}")[0])
    pid = os.fork()
    if pid == 0:  # the child: drop root for good, then run the job as a pool process does
        status = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY.pw_gid)
            os.setuid(NOBODY.pw_uid)
            run_call(store, settings, f"host:{os.getpid()}", payload)
            status = 0 if os.getuid() == NOBODY.pw_uid else 2
        finally:
            os._exit(status)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace owned by `nobody`, in a folder `nobody` can reach (pytest's own temporary folders are root's)."""
    root = Path(tempfile.mkdtemp(prefix="geogate-nobody-"))
    root.chmod(0o755)
    write_source(root / "src.tif")
    shutil.chown(root, NOBODY.pw_uid, NOBODY.pw_gid)
    try:
        yield root
    finally:
        shutil.rmtree(root)


def test_a_worker_process_running_as_nobody_runs_a_gdal_job_and_writes_its_output(
    real_store: EventStore, workspace: Path
) -> None:
    assert os.geteuid() == 0, "the test drops root, so it runs as root"
    load_all()
    settings = Settings(redis_url="redis://unused", workspaces=str(workspace), prefix=real_store.keys.prefix)
    warm = convert(real_store, settings, "warm.tif")
    run_call(real_store, settings, "host:root", encode(real_store.read_aggregate(f"call:{warm}")[0]))

    call_id = convert(real_store, settings, "out.tif")
    status = run_as_nobody(real_store, settings, call_id)

    assert status == 0
    state = real_store.call_state(call_id)
    assert state.status == "succeeded", (state.error_code, state.error_message)
    assert (workspace / "out.tif").stat().st_uid == NOBODY.pw_uid
    with rasterio.open(workspace / "out.tif") as out, rasterio.open(workspace / "src.tif") as src:
        assert np.array_equal(out.read(), src.read())
