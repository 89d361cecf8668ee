"""Whole runs through the jobs, step by step, with templates rendered from earlier thoughts (issue 6 acceptance)."""

import json
from collections.abc import Callable

import pytest
from pydantic import JsonValue

from geogate.calls.store import EventStore
from schemas.events.workflow import workflow_aggregate
from schemas.tools.raster import RasterInfoArgs, RasterReprojectArgs, RasterStatsArgs
from schemas.tools.workflows import (
    ContinueWorkflowArgs,
    GetWorkflowStateArgs,
    ListWorkflowsArgs,
    StartChainOfThoughtArgs,
    StartWorkflowArgs,
    SubmitThoughtArgs,
    WorkflowAnswer,
)
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools import workflows as jobs

Ctx = Callable[[], JobContext]


def submit(make_ctx: Ctx, answer: WorkflowAnswer, thought: str, choice: str | None = None) -> WorkflowAnswer:
    """Do what next_action says, as a model would."""
    assert answer.next_action is not None and answer.next_action.tool == "submitThought"
    args = SubmitThoughtArgs(state_id=answer.state_id, thought=thought, version=answer.version, choice=choice)
    return jobs.submit_thought(args, make_ctx())


def types(store: EventStore, state_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(workflow_aggregate(state_id))]


def test_chain_of_thought_runs_to_completion_with_instructions_built_from_earlier_thoughts(
    make_ctx: Ctx, wf_store: EventStore
) -> None:
    start = jobs.start_chain_of_thought(StartChainOfThoughtArgs(problem="Build an auth system"), make_ctx())
    assert (start.workflow, start.current_step, start.step, start.version) == ("chain_of_thought", 1, "decompose", 1)
    assert "Build an auth system" in start.instruction

    first = submit(make_ctx, start, "1. User model with password hashing\n2. JWT tokens\n- Protected routes")
    assert (first.current_step, first.step) == (2, "analyze_first")
    assert "Focus on the first sub-task: User model with password hashing" in first.instruction
    assert first.saved["decomposition"] == ["User model with password hashing", "JWT tokens", "Protected routes"]

    second = submit(make_ctx, first, "argon2id, unique email, status enum")
    assert "Focus on the next sub-task: JWT tokens" in second.instruction
    assert "argon2id, unique email, status enum" in second.instruction

    third = submit(make_ctx, second, "RS256, 15 minute access tokens")
    assert third.step == "synthesize"
    assert "- [analyze_first] argon2id, unique email, status enum\n" in third.instruction
    assert "- [analyze_second] RS256, 15 minute access tokens\n" in third.instruction

    done = submit(make_ctx, third, "Integrated design")
    assert (done.status, done.next_action, done.version) == ("completed", None, 9)
    assert "Integrated design" in done.instruction
    step = ["workflow.thought_submitted", "workflow.advanced"]
    last = ["workflow.thought_submitted", "workflow.completed"]
    assert types(wf_store, done.state_id) == ["workflow.started", *step * 3, *last]


def test_plan_reprojection_names_the_gdal_calls_with_arguments_rendered_from_the_plan(make_ctx: Ctx) -> None:
    inputs: dict[str, JsonValue] = {"uri": "dem.tif", "goal": "area statistics over Europe"}
    start = jobs.start_workflow(StartWorkflowArgs(workflow="plan_reprojection", inputs=inputs), make_ctx())
    assert [(c.tool, c.with_) for c in start.call_first] == [("raster_info", {"uri": "dem.tif"})]
    RasterInfoArgs.model_validate(start.call_first[0].with_)

    crs = submit(make_ctx, start, "EPSG:4326, 30 m, 3601x3601 Float32, nodata -9999, continuous elevation")
    assert "EPSG:4326, 30 m" in crs.instruction and "area statistics over Europe" in crs.instruction

    plan = {"dst_crs": "EPSG:3035", "property": "equal area", "why": "LAEA Europe keeps areas"}
    resampling = submit(make_ctx, crs, f"```json\n{json.dumps(plan)}\n```")
    assert resampling.saved["crs"] == plan
    assert "Target CRS: EPSG:3035 (LAEA Europe keeps areas)" in resampling.instruction

    choice = {"method": "bilinear", "why": "continuous", "output": "dem_3035.tif"}
    verify = submit(make_ctx, resampling, json.dumps(choice))
    reproject, stats_src, stats_out = verify.call_first
    assert reproject.tool == "raster_reproject"
    assert RasterReprojectArgs.model_validate(reproject.with_).dst_crs == "EPSG:3035"
    assert reproject.with_ == {
        "uri": "dem.tif",
        "output": "dem_3035.tif",
        "dst_crs": "EPSG:3035",
        "resampling": "bilinear",
    }
    assert [RasterStatsArgs.model_validate(c.with_).uri for c in (stats_src, stats_out)] == ["dem.tif", "dem_3035.tif"]
    assert 'resampling="bilinear"' in verify.instruction

    done = submit(make_ctx, verify, '{"verdict": "ok", "notes": "mean within 0.1 m"}')
    assert done.status == "completed"
    assert "dem.tif was reprojected to EPSG:3035 as dem_3035.tif with bilinear resampling." in done.instruction
    assert "Verification: ok. mean within 0.1 m" in done.instruction


def test_a_reply_of_the_wrong_format_is_refused_and_appends_nothing(make_ctx: Ctx, wf_store: EventStore) -> None:
    inputs: dict[str, JsonValue] = {"uri": "dem.tif", "goal": "web map"}
    start = jobs.start_workflow(StartWorkflowArgs(workflow="plan_reprojection", inputs=inputs), make_ctx())
    crs = submit(make_ctx, start, "EPSG:4326 Float32")
    before = types(wf_store, crs.state_id)

    for bad in ("EPSG:3857 because web", '{"dst_crs": "EPSG:3857"}', "[1, 2]"):
        with pytest.raises(JobFailed) as caught:
            submit(make_ctx, crs, bad)
        assert (caught.value.code, caught.value.field) == ("workflow.bad_thought", "thought")

    assert types(wf_store, crs.state_id) == before


def test_research_loops_on_the_models_choice_and_appends_each_round_of_findings(make_ctx: Ctx) -> None:
    args = StartWorkflowArgs(workflow="research", inputs={"question": "Is DEM X accurate?"})
    plan = jobs.start_workflow(args, make_ctx())
    gather = submit(make_ctx, plan, "- vertical accuracy\n- coverage")
    review = submit(make_ctx, gather, "RMSE 4 m (source: paper A)")
    assert review.choices == ["enough", "more"]
    assert review.next_action is not None and "choice" in review.next_action.with_

    with pytest.raises(JobFailed) as caught:
        submit(make_ctx, review, "not sure yet")
    assert (caught.value.code, caught.value.field) == ("workflow.choice_required", "choice")

    again = submit(make_ctx, review, "coverage is open", choice="more")
    assert again.step == "gather"
    review2 = submit(make_ctx, again, "covers 60N-56S (source: spec)")
    assert "- RMSE 4 m (source: paper A)\n- covers 60N-56S (source: spec)\n" in review2.instruction

    answer = submit(make_ctx, review2, "enough")  # the choice may be the reply itself
    assert answer.step == "answer" and answer.saved["findings"] == [
        "RMSE 4 m (source: paper A)",
        "covers 60N-56S (source: spec)",
    ]
    assert submit(make_ctx, answer, "Yes, RMSE 4 m [A]").status == "completed"


def test_continue_workflow_answers_a_step_like_submit_thought(make_ctx: Ctx) -> None:
    start = jobs.start_chain_of_thought(StartChainOfThoughtArgs(problem="p"), make_ctx())

    moved = jobs.continue_workflow(ContinueWorkflowArgs(state_id=start.state_id, acknowledgment="a\nb"), make_ctx())

    assert (moved.step, moved.saved["decomposition"]) == ("analyze_first", ["a", "b"])


def test_get_workflow_state_shows_the_current_step_and_next_call(make_ctx: Ctx) -> None:
    start = jobs.start_chain_of_thought(StartChainOfThoughtArgs(problem="p"), make_ctx())

    shown = jobs.get_workflow_state(GetWorkflowStateArgs(state_id=start.state_id), make_ctx())

    assert shown == start


def test_list_workflows_names_each_workflow_and_the_call_that_starts_it(make_ctx: Ctx) -> None:
    listed = jobs.list_workflows(ListWorkflowsArgs(), make_ctx())

    starts = {w.id: w.start for w in listed.workflows}
    assert starts["chain_of_thought"].tool == "startChainOfThought"
    assert starts["plan_reprojection"].with_["workflow"] == "plan_reprojection"
    inputs = starts["plan_reprojection"].with_["inputs"]
    assert isinstance(inputs, dict) and set(inputs) == {"uri", "goal"}
    assert "plan_reprojection" in listed.summary()


@pytest.mark.parametrize(
    ("workflow", "inputs", "code", "field"),
    [
        ("nope", {}, "workflow.unknown_workflow", "workflow"),
        ("research", {}, "workflow.missing_input", "question"),
        ("research", {"question": "q", "colour": "red"}, "workflow.unknown_input", "colour"),
    ],
)
def test_start_refuses_unknown_workflows_and_bad_inputs_naming_the_field(
    make_ctx: Ctx, workflow: str, inputs: dict[str, str], code: str, field: str
) -> None:
    with pytest.raises(JobFailed) as caught:
        jobs.start_workflow(StartWorkflowArgs(workflow=workflow, inputs=dict(inputs)), make_ctx())

    assert (caught.value.code, caught.value.field) == (code, field)


def test_an_unknown_state_id_is_refused_naming_the_field(make_ctx: Ctx) -> None:
    with pytest.raises(JobFailed) as caught:
        jobs.submit_thought(SubmitThoughtArgs(state_id="wf_nope", thought="x"), make_ctx())

    assert (caught.value.code, caught.value.field) == ("workflow.unknown_state", "state_id")


def test_a_completed_run_refuses_more_replies(make_ctx: Ctx) -> None:
    args = StartWorkflowArgs(workflow="research", inputs={"question": "q"})
    answer = jobs.start_workflow(args, make_ctx())
    for reply, choice in (("a", None), ("b", None), ("ok", "enough"), ("done", None)):
        answer = submit(make_ctx, answer, reply, choice)

    with pytest.raises(JobFailed) as caught:
        jobs.submit_thought(SubmitThoughtArgs(state_id=answer.state_id, thought="more"), make_ctx())

    assert caught.value.code == "workflow.completed"


def test_the_answer_serialises_next_action_with_the_seeds_with_key_and_says_what_to_call(make_ctx: Ctx) -> None:
    start = jobs.start_chain_of_thought(StartChainOfThoughtArgs(problem="p"), make_ctx())

    dumped = start.model_dump(mode="json")

    assert dumped["next_action"] == {
        "tool": "submitThought",
        "with": {"state_id": start.state_id, "version": 1, "thought": "<your reply, saved as decomposition>"},
    }
    assert {"workflow", "current_step", "instruction", "next_action", "state_id", "saved"} <= set(dumped)
    assert f'Then call submitThought with {{"state_id": "{start.state_id}", "version": 1' in start.summary()
    assert WorkflowAnswer.model_validate(dumped) == start
