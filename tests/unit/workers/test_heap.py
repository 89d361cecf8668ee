"""The worker node keeps freed arrays' memory for the next job instead of returning it and faulting it in again."""

import subprocess
import sys

PROBE = """
import sys
import numpy as np
if sys.argv[1] == "keep":
    from workers.run.heap import keep_freed_memory
    assert keep_freed_memory()
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
before = rss_mb()
block = np.ones(16 << 20, dtype=np.float32)  # 64 MiB, touched
del block
print(round(rss_mb() - before))
"""


def kept_after_free(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True, cwd=".")
    return int(done.stdout.strip())


def test_a_freed_64_mib_array_stays_with_the_process_only_with_the_nodes_malloc_settings() -> None:
    assert kept_after_free("default") < 8  # glibc's own: mapped for the array, returned when it is freed
    assert kept_after_free("keep") >= 60  # ours: kept on the heap for the next job's arrays
