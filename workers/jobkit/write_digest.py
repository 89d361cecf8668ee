"""The sha256 of an output taken from its bytes as they are written (`WriteDigest`), so nobody reads it back."""

import hashlib
import io
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO


class WriteDigest:
    """The sha256 of a file taken from the bytes as they are written, so nobody reads the file back for it.

    Valid only if every byte of the file went through one `opener` handle, in order: a writer that seeks back
    to patch what it wrote (a header), opens the file twice or truncates it makes `hexdigest` return None, and
    the caller reads the file instead.

    The hashing runs in a thread of its own, on a copy of each write, while the writer goes on (hashlib lets go
    of the GIL): a job holds one core of its pool, and a call alone leaves the other cores idle. The untiled
    8192² reprojection of `bench/tiles.py` (a 259 MB output), run in one process beside rasterio's one-thread
    warp, took a median 1.04× of it (8 pairs, 1.03-1.14×) against 1.09× (1.06-1.11×) hashing in line: the
    sha256 is ~150 ms of that output, the copies ~25 ms. A writer more than `BACKLOG` bytes ahead of the hashing
    waits for it, so a fast writer of a large file holds no more than that in copies. The thread ends when the
    handle closes.
    """

    BACKLOG = 64 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sha = hashlib.sha256()
        self._end = 0
        self._opens = 0
        self._broken = False
        self._pending: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._hasher: threading.Thread | None = None
        self._done = False
        self._backlog = 0
        self._room = threading.Condition()

    def opener(self, name: str | os.PathLike[str], mode: str = "rb") -> IO[bytes]:
        """A file opener (`rasterio.open(..., opener=)`): `path` opened for writing is digested, anything else
        (a sidecar GDAL probes for) is opened as it is."""
        if Path(name) != self.path or not any(m in mode for m in "wax+"):
            return open(name, mode)
        self._opens += 1
        if self._opens > 1:
            self._broken = True  # and nothing more is queued for the hasher, which the first handle's close ends
        if self._hasher is None:
            self._hasher = threading.Thread(target=self._hash, name="write-digest", daemon=True)
            self._hasher.start()
        return _DigestingFile(name, mode, self._wrote, self._break, self._closed)

    def hexdigest(self) -> str | None:
        """The file's sha256, or None when it was not written strictly in order through one handle (or that handle
        is still open)."""
        if self._hasher is not None:
            if not self._done:
                return None
            self._hasher.join()
        if self._broken or self._opens != 1 or self.path.stat().st_size != self._end:
            return None
        return self._sha.hexdigest()

    def _hash(self) -> None:
        while (data := self._pending.get()) is not None:
            self._sha.update(data)  # hashlib lets go of the GIL for buffers over 2 KiB
            with self._room:
                self._backlog -= len(data)
                self._room.notify()

    def _wrote(self, offset: int, data: memoryview) -> None:
        if offset != self._end:
            self._broken = True
        if not self._broken:
            copy = bytes(data)  # the writer reuses its buffer
            with self._room:
                self._room.wait_for(lambda: self._backlog < self.BACKLOG)
                self._backlog += len(copy)
            self._pending.put(copy)
            self._end += len(copy)

    def _break(self) -> None:
        self._broken = True

    def _closed(self) -> None:
        self._done = True
        self._pending.put(None)


Wrote = Callable[[int, memoryview], None]
"""Told the offset and the bytes of each write."""
Hook = Callable[[], None]


class _DigestingFile(io.FileIO):
    """A raw file whose writes are reported, with their offsets, to a `WriteDigest`."""

    def __init__(self, name: str | os.PathLike[str], mode: str, wrote: Wrote, broke: Hook, closed: Hook) -> None:
        super().__init__(name, mode)
        self._wrote, self._broke, self._closed = wrote, broke, closed

    def write(self, data: bytes | bytearray | memoryview, /) -> int:
        offset = self.tell()
        written = super().write(data) or 0
        self._wrote(offset, memoryview(data).cast("B")[:written])
        return written

    def truncate(self, size: int | None = None, /) -> int:
        self._broke()
        return super().truncate(size)

    def close(self) -> None:
        if not self.closed:
            self._closed()
        super().close()
