"""What the per-call and per-workflow pages show, read from the projections and the log."""

import json
from typing import TYPE_CHECKING, Any

import redis.asyncio as aredis
from pydantic import BaseModel, Field, ValidationError

from gateway.ops.reads import aggregate_events, hash_of, trace_aggregates
from gateway.ops.timeline import Timeline, timeline
from geogate.calls.keys import Keys
from geogate.eventlog.errors import BlobMissing
from geogate.eventlog.store import StoredEvent
from schemas.chat import XRay
from schemas.events import (
    OutputRef,
    ToolSucceeded,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.events.workflow import WorkflowExpired, workflow_aggregate
from schemas.ids import call_aggregate

if TYPE_CHECKING:
    from gateway.runtime import Gateway

ARGS_CHARS = 4000


class CallPage(BaseModel):
    call_id: str
    state: dict[str, str]
    """The call's projection hash (status, tool, actor, trace, times, error)."""
    handler: dict[str, str] = Field(default_factory=dict)
    timeline: Timeline
    args: str = ""
    """The validated arguments, pretty-printed (cut at `ARGS_CHARS`)."""
    xray: XRay | None = None
    related: list[str] = Field(default_factory=list)
    """Other aggregates of the same trace (calls it made, its conversation, a workflow)."""
    tiles: "TileGrid | None" = None
    outputs: list[str] = Field(default_factory=list)
    """The files the call wrote (its `tool.succeeded` outputs), shown on the page's map."""


TILE_STATES = ("queued", "running", "redispatched", "done", "failed")
"""What a tile's cell is coloured by (`geogate.calls.projections.tiles`)."""


class TileGrid(BaseModel):
    """A tiled call's tiles as the projection knows them: the grid's shape and each tile's state, row-major."""

    call_id: str
    columns: int
    rows: int
    cells: list[str]
    live: bool
    """The parent has not ended: the page keeps asking."""

    @property
    def counts(self) -> dict[str, int]:
        return {state: self.cells.count(state) for state in TILE_STATES}


async def tile_grid(client: aredis.Redis, keys: Keys, call_id: str, state: dict[str, str]) -> TileGrid | None:
    """The tiles of call `call_id`, or None when it was not planned as tiles."""
    if "tiles" not in state:
        return None
    tiles, columns = int(state["tiles"]), int(state.get("tiles_columns", "1"))
    known = await hash_of(client, keys.projections().tiles(call_id))
    cells = [known.get(str(i), "queued") for i in range(tiles)]
    live = state.get("status") not in ("succeeded", "failed")
    return TileGrid(call_id=call_id, columns=columns, rows=-(-tiles // columns), cells=cells, live=live)


def _pretty(raw: str) -> str:
    try:
        text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        text = raw
    return text if len(text) <= ARGS_CHARS else text[:ARGS_CHARS] + "\n…"


async def call_page(runtime: "Gateway", call_id: str) -> CallPage | None:
    """The page of call `call_id`, or None when the log has no such call."""
    assert runtime.store is not None
    client, keys = runtime.store.redis, runtime.store.keys
    own = call_aggregate(call_id)
    state = await hash_of(client, keys.projections().call(call_id))
    if not state:
        return None
    aggregates = await trace_aggregates(client, keys, state.get("trace_id", ""), own)
    events = await aggregate_events(client, keys, aggregates)
    return CallPage(
        call_id=call_id,
        state=state,
        handler=await hash_of(client, keys.projections().handler(call_id)),
        timeline=timeline(events, own),
        args=_pretty(state.get("args", "{}")),
        xray=await _xray(runtime, state),
        related=aggregates[1:],
        tiles=await tile_grid(client, keys, call_id, state),
        outputs=outputs_of(events, own),
    )


def outputs_of(events: list[StoredEvent], own: str) -> list[str]:
    """The paths of the files call `own` wrote, in the order its outcome lists them."""
    done = [s.event.data for s in events if s.event.aggregate == own and isinstance(s.event.data, ToolSucceeded)]
    return list(dict.fromkeys(output.path for data in done for output in data.outputs))


async def _xray(runtime: "Gateway", state: dict[str, str]) -> XRay | None:
    """The X-ray of an `ask` call's answer (inline, or in the blob store)."""
    if state.get("status") != "succeeded":
        return None
    result: Any = json.loads(state.get("result", "null"))
    ref = json.loads(state.get("output_ref", "null"))
    if result is None and ref:
        assert runtime.store is not None
        try:
            result = await runtime.store.value_of(None, OutputRef.model_validate(ref))
        except (BlobMissing, ValueError):
            return None
    if not isinstance(result, dict) or "xray" not in result:
        return None
    try:
        return XRay.model_validate(result["xray"])
    except ValidationError:
        return None


class Step(BaseModel):
    """One step of a workflow run: its instruction and the thought that answered it."""

    number: int
    step: str
    instruction: str
    at: str
    thought: str | None = None
    choice: str | None = None
    saved: str | None = None
    call_id: str = ""


class WorkflowPage(BaseModel):
    state_id: str
    workflow: str
    status: str
    steps: list[Step] = Field(default_factory=list)
    message: str = ""
    timeline: Timeline


async def workflow_page(client: aredis.Redis, keys: Keys, state_id: str) -> WorkflowPage | None:
    own = workflow_aggregate(state_id)
    events = await aggregate_events(client, keys, [own])
    if not events:
        return None
    page = WorkflowPage(state_id=state_id, workflow="", status="running", timeline=timeline(events, own))
    for stored in events:
        _apply(page, stored.event.data, stored.event.ts.isoformat())
    return page


def _apply(page: WorkflowPage, data: Any, at: str) -> None:
    if isinstance(data, WorkflowStarted):
        page.workflow = data.workflow
        page.steps.append(Step(number=data.step_number, step=data.step, instruction=data.instruction, at=at))
    elif isinstance(data, WorkflowAdvanced):
        page.steps.append(Step(number=data.step_number, step=data.step, instruction=data.instruction, at=at))
    elif isinstance(data, WorkflowThoughtSubmitted) and page.steps:
        last = page.steps[-1]
        last.thought, last.choice, last.saved, last.call_id = data.text, data.choice, data.save, data.call_id
    elif isinstance(data, WorkflowCompleted):
        page.status, page.message = "completed", data.message
    elif isinstance(data, WorkflowExpired):
        page.status = "expired"
