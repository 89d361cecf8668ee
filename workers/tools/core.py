"""The core tools' jobs: `ping` answers at once (or after `delay_ms`) with the worker's name and the queue wait."""

import time

from schemas.tools.core import PING, PingArgs, PingResult
from workers.jobkit.context import JobContext
from workers.jobs import job


@job(PING)
def ping(args: PingArgs, ctx: JobContext) -> PingResult:
    """Answer the probe; with `delay_ms`, hold the worker in 50 ms steps that honour cancellation."""
    deadline = time.monotonic() + args.delay_ms / 1000
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))
        ctx.progress(args.delay_ms - left * 1000, args.delay_ms, "holding")
    return PingResult(worker=ctx.worker, queue=ctx.queue, queue_wait_ms=round(ctx.queue_wait_ms, 3))
