"""Arguments redaction would corrupt, held beside the log for the worker that runs the call.

Redaction masks secret-shaped text in every event before it is appended and before its queue message is built
(`geogate.eventlog.redaction`), so a presigned URL's `X-Amz-Signature=…` or `token=…` would reach the job as
`[redacted]`. The arguments whose values redaction changed are named in the event (`ToolRequested.held_args`) and
their real values written, in the same atomic append as the event and its queue message, to one hash per call
(`Keys.held_args`, not a stream, not a projection), which expires with the call's dedupe keys (`GEOGATE_DEDUPE_TTL_S`:
while a redelivery could still run the call) and is deleted with the call's outcome. The worker merges them back into
the arguments before the job; the log, the projections, errors and the queue message keep the masked values.
"""

import json
from typing import Protocol

from pydantic import JsonValue

from geogate.calls.keys import Keys
from geogate.eventlog.append import Op
from schemas.events import Event, ToolRequested


class _Hashes(Protocol):
    def hgetall(self, name: str) -> dict[bytes, bytes]: ...


def held_names(args: dict[str, JsonValue], redacted: dict[str, JsonValue]) -> list[str]:
    """The arguments whose values redaction changed."""
    return [name for name, value in args.items() if redacted.get(name) != value]


def hold_ops(keys: Keys, event: Event, args: dict[str, JsonValue], ttl_s: int) -> list[Op]:
    """The writes that hold the real values of `event`'s `held_args` (taken from `args`, the arguments before
    redaction) for its worker; none when redaction changed nothing."""
    data = event.payload(ToolRequested)
    if not data.held_args:
        return []
    key = keys.held_args(data.call_id)
    fields: list[str] = []
    for name in data.held_args:
        fields += [name, json.dumps(args[name])]
    return [Op("HSET", key, tuple(fields)), Op("PEXPIRE", key, (ttl_s * 1000,))]


def release_ops(keys: Keys, data: ToolRequested) -> list[Op]:
    """The delete of a call's held arguments, appended with its outcome."""
    return [Op("DEL", keys.held_args(data.call_id))] if data.held_args else []


def restored(redis: _Hashes, keys: Keys, data: ToolRequested) -> ToolRequested:
    """`data` with its held arguments' real values merged back (those still held: an expired hash leaves the masked
    values, and the job fails on them as it would have)."""
    if not data.held_args:
        return data
    held = {k.decode(): json.loads(v) for k, v in redis.hgetall(keys.held_args(data.call_id)).items()}
    return data.model_copy(update={"args": data.args | {k: v for k, v in held.items() if k in data.held_args}})
