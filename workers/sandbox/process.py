"""The host's handle on one long-lived sandbox server: start it, exchange frames with deadlines, kill it."""

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from typing import Any

from schemas.result_handlers import Isolation
from workers.sandbox.bootstrap import server_program
from workers.sandbox.errors import SandboxUnavailable
from workers.sandbox.inner.framing import read_frame, write_frame
from workers.sandbox.isolation import SandboxConfig, command

READY_LIMIT = 4096


class SandboxProcess:
    """One sandbox server process (bwrap, unshare or plain), owned by the process that started it."""

    def __init__(self, config: SandboxConfig, isolation: Isolation) -> None:
        self.isolation = isolation
        self.owner_pid = os.getpid()
        self._stderr = _scratch_file()
        self._proc = subprocess.Popen(
            command(isolation, config.python, server_program()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={},
            cwd="/",
            start_new_session=True,  # its own process group, so one killpg takes the whole sandbox down
            **_identity(config),
        )
        self.seccomp = bool(self._handshake(config.startup_timeout_s).get("seccomp"))

    def _handshake(self, timeout_s: float) -> dict[str, Any]:
        try:
            hello = self.read(READY_LIMIT, time.monotonic() + timeout_s)
        except (TimeoutError, EOFError, ValueError, OSError) as exc:
            raise self._failed_start() from exc
        if not isinstance(hello, dict) or hello.get("op") != "ready":
            raise self._failed_start()
        return hello

    def _failed_start(self) -> SandboxUnavailable:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        error = SandboxUnavailable(f"the sandbox server did not start: {self._stderr_tail()}")
        self.abandon()
        return error

    @property
    def pid(self) -> int:
        """Host pid of the sandbox's outermost process (bwrap, unshare or the server itself)."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """True while the server process runs."""
        return self._proc.poll() is None

    def send(self, message: Any) -> None:
        """Write one frame to the server's stdin. Raises OSError (BrokenPipeError) if it died."""
        assert self._proc.stdin is not None
        write_frame(self._proc.stdin.fileno(), message)

    def read(self, limit: int, deadline: float | None) -> Any:
        """Read one frame from the server's stdout; see `framing.read_frame` for what it raises."""
        assert self._proc.stdout is not None
        frame = read_frame(self._proc.stdout.fileno(), limit, deadline)
        if frame is None:
            raise EOFError("the sandbox server closed its output")
        return frame

    def kill(self) -> None:
        """Kill the whole sandbox (its process group) and reap it."""
        if self.owner_pid != os.getpid():
            self.abandon()
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        self.abandon()

    def abandon(self) -> None:
        """Close our pipe ends without killing: used in a forked child, where the parent still owns the server."""
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        if self._stderr >= 0:
            os.close(self._stderr)
            self._stderr = -1

    def _stderr_tail(self) -> str:
        size = os.fstat(self._stderr).st_size
        tail = os.pread(self._stderr, 2000, max(size - 2000, 0))
        return tail.decode(errors="replace").strip() or "no diagnostics"


def _scratch_file() -> int:
    fd, path = tempfile.mkstemp(prefix="geogate-sandbox-", suffix=".stderr")
    os.unlink(path)  # anonymous: gone with the descriptor
    return fd


def _identity(config: SandboxConfig) -> dict[str, Any]:
    uid = config.drop_to()
    return {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
