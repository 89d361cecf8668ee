"""A file's lineage, read from the log: the call that last wrote it (the `writers` projection), that call's events,
and recursively the calls that wrote its inputs, as `Step`s ordered so that each follows the calls it depends on.

An input is followed to its writer only when the writer's recorded digest is the one the call read: a file written
again later (or changed outside Geogate) has no record of the version read, and the lineage stops there.
"""

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from geogate.calls.store import EventStore
from geogate.eventlog.errors import BlobMissing
from schemas.events import (
    Event,
    FileDigest,
    ToolFannedOut,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.ids import call_aggregate
from schemas.tools.provenance import Step, TilesSummary
from schemas.tools.tiling import tile_call_id

D = TypeVar("D")

DECISION_KEYS = ("reprojected", "reprojections", "resampling")
"""Result fields that record a choice, besides every field naming a CRS."""


def writer_of(store: EventStore, path: str) -> dict[str, Any] | None:
    """The `writers` entry of `path` (`{call, sha256, size, at}`), None when no call of the log wrote it."""
    raw = store.redis.hget(store.live.writers(), path)
    return json.loads(raw) if raw is not None else None


def lineage(store: EventStore, path: str, depth: int) -> list[Step]:
    """The calls that produced `path`, each after those that wrote its inputs; empty when Geogate never wrote it."""
    steps: dict[str, Step] = {}
    order: list[Step] = []

    def visit(file: str, sha256: str | None, level: int) -> None:
        writer = writer_of(store, file)
        if writer is None or writer["call"] in steps or (sha256 is not None and writer["sha256"] != sha256):
            return
        step = read_step(store, writer["call"], file, writer)
        steps[step.call_id] = step
        if level < depth:
            for item in step.inputs:
                visit(item.path, item.sha256, level + 1)
        order.append(step)

    visit(path, None, 0)
    return order


def read_step(store: EventStore, call_id: str, path: str = "", writer: dict[str, Any] | None = None) -> Step:
    """One call as its events tell it; an `expired` step naming only `path` when they are past retention."""
    events = store.read_aggregate(call_aggregate(call_id))
    requested = _last(events, ToolRequested)
    succeeded = _last(events, ToolSucceeded)
    if requested is None or succeeded is None:
        known = FileDigest(path=path, sha256=(writer or {}).get("sha256"), size=(writer or {}).get("size"))
        return Step(call_id=call_id, outputs=[known] if path else [], expired=True)
    started = _last(events, ToolStarted)
    fanned = _last(events, ToolFannedOut)
    tiles = _tiles(store, call_id, fanned[1].tiles) if fanned else None
    data, done = requested[1], succeeded[1]
    inputs = _unique([*done.inputs, *(tiles[1] if tiles else [])])
    return Step(
        call_id=call_id,
        tool=data.tool,
        args=data.args,
        actor=requested[0].actor,
        worker=done.worker or (started[1].worker if started else ""),
        requested_at=requested[0].ts.isoformat(),
        started_at=started[0].ts.isoformat() if started else "",
        finished_at=succeeded[0].ts.isoformat(),
        duration_ms=done.duration_ms,
        inputs=inputs,
        outputs=done.outputs,
        versions=done.versions or (tiles[2] if tiles else {}),
        justifications=_justifications(store, data.justified_by),
        decisions=_decisions(store, done),
        tiles=tiles[0] if tiles else None,
    )


def _last(events: Sequence[Event], kind: type[D]) -> tuple[Event, D] | None:
    found = [(e, e.data) for e in events if isinstance(e.data, kind)]
    return found[-1] if found else None


def _unique(items: list[FileDigest]) -> list[FileDigest]:
    seen: dict[str, FileDigest] = {}
    for item in items:
        seen.setdefault(item.path, item)
    return list(seen.values())


def _tiles(store: EventStore, call_id: str, count: int) -> tuple[TilesSummary, list[FileDigest], dict[str, str]]:
    """The tiles summarised, the inputs they read and the versions they ran with."""
    workers: set[str] = set()
    inputs: list[FileDigest] = []
    versions: dict[str, str] = {}
    duration = 0.0
    for index in range(count):
        done = _last(store.read_aggregate(call_aggregate(tile_call_id(call_id, index))), ToolSucceeded)
        if done is None:
            continue
        workers.add(done[1].worker)
        inputs += done[1].inputs
        versions = versions or done[1].versions
        duration += done[1].duration_ms
    summary = TilesSummary(count=count, workers=sorted(w for w in workers if w), duration_ms=round(duration, 3))
    return summary, inputs, versions


def _justifications(store: EventStore, hashes: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for digest in hashes:
        raw = store.hash_strings(store.live.justification(digest))
        if raw:
            found[digest] = {
                "domain": raw.get("domain", ""),
                "status": raw.get("status", ""),
                "justification": json.loads(raw.get("justification", "null")),
            }
    return found


def _decisions(store: EventStore, done: ToolSucceeded) -> dict[str, Any]:
    try:
        result = store.value_of(done.result, done.output_ref)
    except BlobMissing:  # the result's blob expired: the step keeps what the events hold
        return {}
    if not isinstance(result, dict):
        return {}
    return {k: v for k, v in result.items() if "crs" in k.lower() or k in DECISION_KEYS}
