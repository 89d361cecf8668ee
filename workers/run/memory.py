"""Memory per job: a pool process's address-space limit, and what a job that runs into it ends with.

Each prefork pool process sets `RLIMIT_AS` (`GEOGATE_JOB_MEMORY_MB`) when it starts. An allocation past it fails
where it is made, a numpy array (`MemoryError`) or a GDAL buffer (`CPLE_OutOfMemoryError`, "Out of memory" in
GDAL's message), instead of growing until the kernel's OOM killer ends the process, or another one. The call fails
with `job.out_of_memory`, not retryable (the same input asks for the same memory), and the process goes on taking
calls. Only the soft limit is set: a handler sandbox started from the process sets its own, lower, limits.
"""

import resource

from rasterio._err import CPLE_OutOfMemoryError

from geogate.settings import Settings
from workers.jobkit.errors import JobFailed

OUT_OF_MEMORY = "job.out_of_memory"
_GDAL_OUT_OF_MEMORY = "out of memory"
"""How GDAL's allocators word a failed allocation (`VSIMalloc(): Out of memory allocating …`)."""


def limit_address_space(megabytes: int) -> int | None:
    """Cap the calling process's address space at `megabytes` (0: no cap); the limit set in bytes, or None."""
    if megabytes <= 0:
        return None
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = megabytes << 20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


def ran_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from, is a failed allocation."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError | CPLE_OutOfMemoryError):
            return True
        if _GDAL_OUT_OF_MEMORY in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def out_of_memory(settings: Settings, tool: str) -> JobFailed:
    """The error of a call whose job needed more memory than a pool process may use."""
    message = (
        f"the {tool} job needed more memory than a worker process may use "
        f"(GEOGATE_JOB_MEMORY_MB={settings.job_memory_mb}); ask for a smaller output or area, "
        "or raise the setting on the workers"
    )
    return JobFailed(OUT_OF_MEMORY, message, details={"limit_mb": settings.job_memory_mb})
