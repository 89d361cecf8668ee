"""The worker node's malloc settings: large arrays freed by one job are reused by the next, not returned and faulted in
again.

glibc hands out blocks over its mmap threshold (128 KiB to 32 MiB, moving) as fresh mappings and trims the heap's top
above its trim threshold, so each job's arrays (a 2048² window's pixels, GDAL's warp buffers) were new pages again,
each first touch a page fault. With a fixed threshold of 256 MiB and a trim threshold of 1 GiB, an 8192² tiled
reprojection on two worker processes took 1.96 s and 1.77 s against 2.06 s and 1.88 s without (two paired runs),
with 3.1 s of the pool processes' CPU against 3.3–3.4 s: most of what two tiles at once had cost each other. A pool
process may keep up to about 1 GiB of freed heap between jobs; blocks over 256 MiB still go back at once.
"""

import ctypes
import ctypes.util
import logging

logger = logging.getLogger(__name__)

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 256 << 20
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Set the node's malloc thresholds (inherited by the pool processes it forks); False where there is no glibc."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    done = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    if not done:
        logger.warning("malloc thresholds not set: jobs' large arrays will be faulted in afresh each time")
    return done
