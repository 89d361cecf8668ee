"""The running index (`ProjectionKeys.running`): which worker lease holds each run right now. The reaper reads it."""

import json

from pydantic import BaseModel

from geogate.calls.keys import FAN_IN_RUN, HANDLER_RUN
from schemas.events import Event


class RunningEntry(BaseModel):
    """One run a worker holds: a call's job (`run` = call id), its result handler (`run` = `handler:<call id>`) or
    a tiled call's fan-in (`run` = `fanin:<call id>`)."""

    run: str
    lease: str
    worker: str
    attempt: str
    started_at: str

    @property
    def stage(self) -> str:
        if self.run.startswith(HANDLER_RUN):
            return "handler"
        return "fan_in" if self.run.startswith(FAN_IN_RUN) else "tool"

    @property
    def call_id(self) -> str:
        return self.run.removeprefix(HANDLER_RUN).removeprefix(FAN_IN_RUN)

    @classmethod
    def parse(cls, run: bytes | str, value: bytes | str) -> "RunningEntry":
        run = run.decode() if isinstance(run, bytes) else run
        return cls(run=run, **json.loads(value))


def running_value(event: Event, *, lease: str, worker: str, attempt: str) -> str:
    """The index value of the run `event` (a `*.started`) begins: pure, so replay writes the same bytes."""
    entry = {"lease": lease, "worker": worker, "attempt": attempt, "started_at": event.ts.isoformat()}
    return json.dumps(entry, separators=(",", ":"), sort_keys=True)
