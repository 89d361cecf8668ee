"""State is the fold of the workflow events; replay rebuilds every projection exactly; idle runs expire (issue 6)."""

from collections.abc import Callable

import pytest
from pydantic import JsonValue

from geogate.calls.keys import ProjectionKeys
from geogate.calls.store import EventStore
from schemas.events.workflow import workflow_aggregate
from schemas.ids import new_id
from schemas.tools.workflows import StartChainOfThoughtArgs, StartWorkflowArgs, SubmitThoughtArgs, WorkflowAnswer
from schemas.transcript import TranscriptView
from schemas.transcript import render_transcript as render_projected
from tests.unit.workers.workflows.conftest import Clock
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools import workflows as jobs
from workers.workflows.service import WorkflowService
from workers.workflows.state import fold, render_transcript

Ctx = Callable[[], JobContext]


def reply(make_ctx: Ctx, answer: WorkflowAnswer, thought: str, choice: str | None = None) -> WorkflowAnswer:
    args = SubmitThoughtArgs(state_id=answer.state_id, thought=thought, version=answer.version, choice=choice)
    return jobs.submit_thought(args, make_ctx())


def some_runs(make_ctx: Ctx) -> list[str]:
    """A finished chain of thought, a research run mid-loop, a geospatial run at its second step."""
    cot = jobs.start_chain_of_thought(StartChainOfThoughtArgs(problem="p"), make_ctx())
    for thought in ("a\nb", "on a", "on b", "all"):
        cot = reply(make_ctx, cot, thought)
    research = jobs.start_workflow(StartWorkflowArgs(workflow="research", inputs={"question": "q"}), make_ctx())
    for thought, choice in (("x\ny", None), ("found x", None), ("need y", "more")):
        research = reply(make_ctx, research, thought, choice)
    inputs: dict[str, JsonValue] = {"uri": "dem.tif", "goal": "web map"}
    geo = reply(
        make_ctx, jobs.start_workflow(StartWorkflowArgs(workflow="plan_reprojection", inputs=inputs), make_ctx()), "ok"
    )
    return [cot.state_id, research.state_id, geo.state_id]


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def snapshot(store: EventStore, keys: ProjectionKeys, state_ids: list[str]) -> dict[str, object]:
    hashes = {sid: store.redis.hgetall(keys.workflow(sid)) for sid in state_ids}
    lists = {sid: store.redis.lrange(keys.transcript(sid), 0, -1) for sid in state_ids}
    return {"hashes": hashes, "transcripts": lists}


def test_replay_into_a_fresh_namespace_rebuilds_every_workflow_projection_exactly(
    make_ctx: Ctx, wf_store: EventStore
) -> None:
    state_ids = some_runs(make_ctx)
    fresh = wf_store.keys.projections(f"replay{new_id()[-6:]}")

    wf_store.project(wf_store.read("workflows"), fresh)

    live = snapshot(wf_store, wf_store.live, state_ids)
    assert snapshot(wf_store, fresh, state_ids) == live
    assert all(wf_store.redis.hgetall(wf_store.live.workflow(sid)) for sid in state_ids)


def test_the_fold_and_the_projection_agree_on_status_step_version_and_saved_values(
    make_ctx: Ctx, wf_store: EventStore
) -> None:
    for state_id in some_runs(make_ctx):
        state = fold(wf_store.read_aggregate(workflow_aggregate(state_id)))
        stored = wf_store.redis.hgetall(wf_store.live.workflow(state_id))
        assert isinstance(stored, dict)
        raw = {text(k): text(v) for k, v in stored.items()}
        assert state is not None
        assert (raw["status"], raw["step"], int(raw["version"])) == (state.status, state.step, state.version)
        saved = {k.removeprefix("saved:") for k in raw if k.startswith("saved:")}
        assert saved == set(state.saved)


def test_folding_the_same_events_twice_gives_the_same_state(make_ctx: Ctx, wf_store: EventStore) -> None:
    for state_id in some_runs(make_ctx):
        events = wf_store.read_aggregate(workflow_aggregate(state_id))
        assert fold(events) == fold(list(events))


def test_events_of_other_aggregates_and_an_empty_log_fold_to_nothing(wf_store: EventStore) -> None:
    assert fold([]) is None
    assert fold(wf_store.read_aggregate(workflow_aggregate("wf_none"))) is None


def test_the_transcript_shows_inputs_every_instruction_and_every_reply_in_order(
    make_ctx: Ctx, wf_store: EventStore
) -> None:
    cot_id = some_runs(make_ctx)[0]
    state = fold(wf_store.read_aggregate(workflow_aggregate(cot_id)))
    assert state is not None

    text = render_transcript(state)

    assert text.startswith(f"# Workflow chain_of_thought ({cot_id})\n")
    assert "- problem: p\n" in text
    headings = [line.split(" (v")[0] for line in text.splitlines() if line.startswith("## ")]
    assert headings[:3] == [
        "## Instruction for step 'decompose'",
        "## Reply to step 'decompose'",
        "## Instruction for step 'analyze_first'",
    ]
    assert headings[-1] == "## Completed"
    assert "> on a\n" in text


def test_an_idle_run_touched_after_its_time_expires_and_refuses_replies(
    service: WorkflowService, clock: Clock, wf_store: EventStore
) -> None:
    start = service.start("chain_of_thought", {"problem": "p"}, new_id())
    clock.advance(3600 + 1)

    with pytest.raises(JobFailed) as caught:
        service.reply(start.state_id, "late", call_id=new_id())

    assert (caught.value.code, caught.value.field) == ("workflow.expired", "state_id")
    shown = service.show(start.state_id)
    assert (shown.status, shown.next_action) == ("expired", None)
    types = [e.type for e in wf_store.read_aggregate(workflow_aggregate(start.state_id))]
    assert types == ["workflow.started", "workflow.expired"]
    assert wf_store.redis.hget(wf_store.live.workflow(start.state_id), "status") == b"expired"


def test_each_step_restarts_the_idle_clock(service: WorkflowService, clock: Clock) -> None:
    answer = service.start("chain_of_thought", {"problem": "p"}, new_id())
    for thought in ("a\nb", "on a", "on b"):
        clock.advance(3600 - 1)
        answer = service.reply(answer.state_id, thought, call_id=new_id(), version=answer.version)

    assert (answer.status, answer.step) == ("active", "synthesize")


def test_showing_an_expired_run_marks_it_expired_once(
    service: WorkflowService, clock: Clock, wf_store: EventStore
) -> None:
    start = service.start("research", {"question": "q"}, new_id())
    clock.advance(7200)

    service.show(start.state_id)
    service.show(start.state_id)

    types = [e.type for e in wf_store.read_aggregate(workflow_aggregate(start.state_id))]
    assert types == ["workflow.started", "workflow.expired"]


def test_the_idle_limit_comes_from_the_run_not_from_todays_setting(
    service: WorkflowService, clock: Clock, wf_store: EventStore
) -> None:
    """A run keeps the ttl it started with (recorded in workflow.started), so a settings change rewrites no history."""
    start = service.start("chain_of_thought", {"problem": "p"}, new_id())
    longer = WorkflowService(wf_store, service.definitions, ttl_s=10 * 3600, clock=clock)
    clock.advance(2 * 3600)

    assert longer.show(start.state_id).status == "expired"


def projected_transcript(store: EventStore, keys: ProjectionKeys, state_id: str) -> str:
    fields = store.redis.hgetall(keys.workflow(state_id))
    entries = store.redis.lrange(keys.transcript(state_id), 0, -1)
    assert isinstance(fields, dict) and isinstance(entries, list)
    view = TranscriptView.from_redis(fields, entries)
    assert view is not None
    return render_projected(view)


def test_the_transcript_from_the_projection_equals_the_one_from_the_fold_live_and_replayed(
    make_ctx: Ctx, wf_store: EventStore, service: WorkflowService, clock: Clock
) -> None:
    """The gateway renders `workflow://{state_id}` from the projection; it must say what the log says."""
    expired = service.start("research", {"question": "q"}, new_id()).state_id
    clock.advance(2 * 3600)
    service.show(expired)
    state_ids = [*some_runs(make_ctx), expired]
    fresh = wf_store.keys.projections("again")
    wf_store.project(wf_store.read("workflows"), fresh)

    for state_id in state_ids:
        state = fold(wf_store.read_aggregate(workflow_aggregate(state_id)))
        assert state is not None
        expected = render_transcript(state)
        assert projected_transcript(wf_store, wf_store.live, state_id) == expected
        assert projected_transcript(wf_store, fresh, state_id) == expected


def test_an_unknown_run_has_no_transcript_view() -> None:
    assert TranscriptView.from_redis({}, []) is None
