"""A pool process the kernel's OOM killer ended while it ran a call: the call fails at once, not tried again.

Celery requeues the message of a call whose pool process died (`task_reject_on_worker_lost`), and the call starts
again, up to `GEOGATE_MAX_ATTEMPTS` times: right for a crash that may not repeat, wrong for a job that needs more
memory than the machine or the container gives, which would be killed again each time (and whose neighbours may be
killed with it). The node tells the two apart by the kernel's count of OOM kills (`oom_kill` in `/proc/vmstat`,
which counts the kills inside a container's memory cgroup too), read when the pool process accepts the call and
again when Celery reports the process lost. If the count rose, the call's attempt on that process fails with
`job.out_of_memory` before Celery requeues its message, whose start is then refused.

The count is the machine's: an OOM kill of another process at the same moment would be taken for this one. A pool
process that dies any other way (a crash, a `kill -9`) is requeued as before, and a node whose main process is
killed (its calls come back through the reaper when its lease lapses) is not told apart.
"""

import logging
import socket
from pathlib import Path
from typing import Any

from billiard.einfo import ExceptionWithTraceback
from billiard.exceptions import WorkerLostError
from celery.worker.request import Request
from redis.exceptions import RedisError

from geogate.calls import keys
from geogate.calls.publish import follow
from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from geogate.eventlog.errors import EventLogError
from geogate.settings import Settings
from schemas.codec import decode
from schemas.events import ToolFailed, ToolRequested
from workers.jobs import OWN_LIFECYCLE
from workers.run.memory import OUT_OF_MEMORY

logger = logging.getLogger(__name__)

VMSTAT = Path("/proc/vmstat")


def oom_kills(vmstat: Path = VMSTAT) -> int | None:
    """How many processes the kernel's OOM killer has ended since boot; None where the kernel does not say."""
    try:
        lines = vmstat.read_text().splitlines()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in lines if line.startswith("oom_kill ")), None)


def fail_killed_call(store: EventStore, settings: Settings, payload: bytes, worker: str) -> bool:
    """End the call that `payload` carries with `job.out_of_memory` if its current attempt ran on `worker` (the
    pool process the OOM killer ended); True when that outcome landed."""
    requested = decode(payload)
    data = requested.payload(ToolRequested)
    if data.tool in OWN_LIFECYCLE:
        return False  # a fan-in or a result handler: no attempt of this call to end
    state = store.call_state(data.call_id)
    if state is None or state.terminal or not state.attempt or state.worker != worker:
        return False
    message = (
        f"the {data.tool} job needed more memory than the machine gives: the kernel's OOM killer ended the worker "
        f"process running it ({worker}); it is not tried again. Ask for a smaller output or area, or cap each job "
        f"below what the machine has (GEOGATE_JOB_MEMORY_MB={settings.job_memory_mb}) so that it fails cleanly"
    )
    failed = ToolFailed(
        call_id=data.call_id,
        code=OUT_OF_MEMORY,
        message=message,
        details={"killed": "oom", "worker": worker, "limit_mb": settings.job_memory_mb},  # type: ignore[arg-type]
        worker=worker,
    )
    fenced = Expect(store.live.call(data.call_id), "attempt", "in", (state.attempt,))
    landed = not store.append(follow(requested, failed), keys.outcome_key(data.call_id), expect=[fenced]).refused
    if landed:
        logger.warning("call %s failed: the OOM killer ended its worker process %s", data.call_id, worker)
    return landed


class OomAwareRequest(Request):  # type: ignore[misc]
    """Celery's request in the node, which reads the OOM-kill count when a pool process accepts the call and, when
    the process is lost, fails the call if the count rose (before Celery requeues the message)."""

    oom_kills_at_start: int | None = None

    def on_accepted(self, pid: int, time_accepted: float) -> Any:
        self.oom_kills_at_start = oom_kills()
        return super().on_accepted(pid, time_accepted)

    def on_failure(self, exc_info: Any, send_failed_event: bool = True, return_ok: bool = False) -> Any:
        exc = exc_info.exception
        if isinstance(exc, ExceptionWithTraceback):
            exc = exc.exc
        if isinstance(exc, WorkerLostError) and self._killed_by_oom():
            self._fail_call()
        return super().on_failure(exc_info, send_failed_event=send_failed_event, return_ok=return_ok)

    def _killed_by_oom(self) -> bool:
        now = oom_kills()
        return self.oom_kills_at_start is not None and now is not None and now > self.oom_kills_at_start

    def _fail_call(self) -> None:
        task = self.task
        worker = f"{socket.gethostname()}:{self.worker_pid}"  # as the pool process named itself (`GeogateTask`)
        try:
            fail_killed_call(task.store, task.settings, self.args[0], worker)
        except (RedisError, EventLogError, ValueError, IndexError, TypeError):  # the requeue below still happens
            logger.exception("could not fail call %s after the OOM killer ended its worker process", self.id)
