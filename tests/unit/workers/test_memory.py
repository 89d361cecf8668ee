"""What counts as a job running out of memory (`workers.run.memory`), whatever the job wrapped it in."""

import numpy as np
import pytest
from rasterio.errors import RasterioIOError

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolFailed
from schemas.ids import new_id
from schemas.tools import TOOLS
from workers.jobkit.errors import JobFailed
from workers.jobs import JOBS
from workers.run.memory import ran_out_of_memory
from workers.run.runner import run_call
from workers.tools import load_all

load_all()


def raised_from(cause: BaseException) -> JobFailed:
    try:
        try:
            raise cause
        except BaseException as exc:
            raise JobFailed("gdal.read_failed", "uri: 'huge.tif' could not be read", field="uri") from exc
    except JobFailed as wrapped:
        return wrapped


@pytest.mark.parametrize(
    "cause",
    [
        MemoryError(),
        RasterioIOError("VSIMalloc(): Out of memory allocating 4294967296 bytes"),
    ],
    ids=["numpy", "gdal"],
)
def test_a_failed_allocation_under_a_job_error_is_out_of_memory(cause: BaseException) -> None:
    assert ran_out_of_memory(raised_from(cause))


def test_numpy_s_own_allocation_error_is_out_of_memory() -> None:
    with pytest.raises(MemoryError) as caught:
        np.empty(1 << 62, dtype="uint8")
    assert ran_out_of_memory(caught.value)


def test_an_unreadable_file_is_not_out_of_memory() -> None:
    assert not ran_out_of_memory(raised_from(RasterioIOError("huge.tif: not recognized as a supported file format")))


def test_a_job_that_runs_out_of_memory_fails_its_call_with_out_of_memory_naming_the_cap(
    fake_store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def past_the_cap(*_: object) -> None:
        np.empty(1 << 62, dtype="uint8")  # as under RLIMIT_AS: the allocation fails where it is made

    monkeypatch.setitem(JOBS, "ping", past_the_cap)
    call_id = new_id()
    requested = request_event(TOOLS["ping"], {}, call_id=call_id, actor="tester")
    fake_store.append(requested, keys.requested_key(call_id))

    run_call(fake_store, Settings(redis_url="redis://unused", job_memory_mb=512), "host:1", encode(requested))

    failed = fake_store.read_aggregate(requested.aggregate)[-1].payload(ToolFailed)
    assert (failed.code, failed.retryable, failed.details) == ("job.out_of_memory", False, {"limit_mb": 512})
