"""Length-prefixed JSON frames over raw file descriptors, shared by the host and the sandbox server."""

import json
import os
import select
import struct
import time
from typing import Any

HEADER = struct.Struct(">I")


class FrameTooLarge(ValueError):
    """A peer announced a frame longer than the reader accepts."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit}")
        self.size = size


def encode(message: Any) -> bytes:
    """Encode one message as a frame: 4-byte big-endian length, then compact UTF-8 JSON."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    return HEADER.pack(len(body)) + body


def write_frame(fd: int, message: Any) -> None:
    """Write one whole frame to `fd` (blocking)."""
    data = memoryview(encode(message))
    while data:
        data = data[os.write(fd, data) :]


def _wait_readable(fd: int, deadline: float | None) -> None:
    if deadline is None:
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
        raise TimeoutError("no frame before the deadline")


def read_exact(fd: int, size: int, deadline: float | None = None) -> bytes | None:
    """Read exactly `size` bytes; None on EOF before the first byte. Raises EOFError on a torn frame."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        _wait_readable(fd, deadline)
        chunk = os.read(fd, min(size - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise EOFError("the peer closed the pipe in the middle of a frame")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int, deadline: float | None = None) -> Any:
    """Read one frame. Returns None on a clean EOF.

    Raises:
        FrameTooLarge: the announced length exceeds `limit` (the body is not read).
        TimeoutError: `deadline` (a `time.monotonic()` value) passed first.
        EOFError: the peer closed the pipe mid-frame.
        ValueError: the body is not JSON.
    """
    header = read_exact(fd, HEADER.size, deadline)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > limit:
        raise FrameTooLarge(size, limit)
    body = read_exact(fd, size, deadline)
    if body is None:
        raise EOFError("the peer closed the pipe after a frame header")
    return json.loads(body)
