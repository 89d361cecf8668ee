"""Named pause points where fault tests stop a worker at an exact step (`GEOGATE_FAULT_PAUSE_AT`).

A worker whose settings name a point stops itself there with SIGSTOP, as if the machine had frozen at that step; the
test then kills the node (SIGKILL of its process group) or lets it go on (SIGCONT). With the setting unset, as in
every normal run, a pause point does nothing.
"""

import os
import signal

from workers.jobkit.context import JobContext

FAN_IN_POINTS = ("fan_in.publish", "fan_in.copied", "fan_in.before_rename", "fan_in.after_rename")
"""The fan-in's steps: before any file is touched, after the staging file was copied aside (compressed outputs and
outputs with overviews), with the output ready under its temporary name and its digest recorded, after the rename."""


def job_point(tool: str) -> str:
    """The point where a call of `tool` has started and its arguments validated, before its job's first step: a node
    paused there is in the middle of the call (`tool.started` on the log, no outcome)."""
    return f"job.{tool}"


def pause_point(ctx: JobContext, name: str) -> None:
    """Stop this process here when the settings name `name`."""
    if ctx.settings is not None and ctx.settings.fault_pause_at == name:
        os.kill(os.getpid(), signal.SIGSTOP)
