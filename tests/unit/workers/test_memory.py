"""What counts as a job running out of memory (`workers.memory`), whatever the job wrapped it in."""

import numpy as np
import pytest
from rasterio.errors import RasterioIOError

from workers.errors import JobFailed
from workers.memory import ran_out_of_memory


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
