"""Optimistic concurrency: one reply per step lands; stale, duplicate and racing replies get the version error."""

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from geogate.calls.store import EventStore
from geogate.eventlog.append import Expect
from geogate.eventlog.store import AppendResult
from schemas.events import Event, WorkflowThoughtSubmitted
from schemas.events.workflow import workflow_aggregate
from schemas.tools.workflows import GetWorkflowStateArgs, StartChainOfThoughtArgs, SubmitThoughtArgs, WorkflowAnswer
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.tools import workflows as jobs

Ctx = Callable[[], JobContext]


def events(store: EventStore, state_id: str) -> list[Event]:
    return store.read_aggregate(workflow_aggregate(state_id))


def submitted_steps(store: EventStore, state_id: str) -> list[str]:
    return [e.data.step for e in events(store, state_id) if isinstance(e.data, WorkflowThoughtSubmitted)]


def started(make_ctx: Ctx) -> WorkflowAnswer:
    return jobs.start_chain_of_thought(StartChainOfThoughtArgs(problem="p"), make_ctx())


def outcome(call: Callable[[], WorkflowAnswer]) -> WorkflowAnswer | JobFailed:
    try:
        return call()
    except JobFailed as exc:
        return exc


def test_two_racing_submits_for_the_same_step_advance_exactly_once(
    make_ctx: Ctx, wf_store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both calls read version 1 before either appends (a barrier holds them): one lands, one is refused."""
    start = started(make_ctx)
    barrier, read = threading.Barrier(2, timeout=5), wf_store.read_aggregate

    def read_together(aggregate: str) -> list[Event]:
        found = read(aggregate)
        barrier.wait()
        return found

    monkeypatch.setattr(wf_store, "read_aggregate", read_together)
    calls = [SubmitThoughtArgs(state_id=start.state_id, thought=f"decomposition {i}") for i in (1, 2)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda args: outcome(lambda: jobs.submit_thought(args, make_ctx())), calls))
    monkeypatch.undo()

    answers = [r for r in results if isinstance(r, WorkflowAnswer)]
    errors = [r for r in results if isinstance(r, JobFailed)]
    assert len(answers) == 1 and answers[0].step == "analyze_first" and answers[0].version == 3
    assert [(e.code, e.field) for e in errors] == [("workflow.version_conflict", "version")]
    assert submitted_steps(wf_store, start.state_id) == ["decompose"]
    assert [e.type for e in events(wf_store, start.state_id)][-1] == "workflow.advanced"


def test_many_threads_submitting_the_same_version_advance_once(make_ctx: Ctx, wf_store: EventStore) -> None:
    start = started(make_ctx)
    calls = [SubmitThoughtArgs(state_id=start.state_id, thought=f"t{i}", version=1) for i in range(8)]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda args: outcome(lambda: jobs.submit_thought(args, make_ctx())), calls))

    assert sum(isinstance(r, WorkflowAnswer) for r in results) == 1
    assert {r.code for r in results if isinstance(r, JobFailed)} == {"workflow.version_conflict"}
    assert submitted_steps(wf_store, start.state_id) == ["decompose"]


def test_a_repeated_submit_with_the_old_version_is_refused_and_never_advances_twice(
    make_ctx: Ctx, wf_store: EventStore
) -> None:
    start = started(make_ctx)
    args = SubmitThoughtArgs(state_id=start.state_id, thought="a\nb", version=start.version)
    first = jobs.submit_thought(args, make_ctx())

    with pytest.raises(JobFailed) as caught:
        jobs.submit_thought(args, make_ctx())

    assert caught.value.code == "workflow.version_conflict"
    assert submitted_steps(wf_store, start.state_id) == ["decompose"]
    assert jobs.get_workflow_state(GetWorkflowStateArgs(state_id=start.state_id), make_ctx()) == first


def crash_before_the_advance(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker dies after appending the reply and before appending `workflow.advanced` (once)."""
    append = store.append

    def dying_append(event: Event, dedupe_key: str, *, expect: Expect | None = None) -> AppendResult:
        if event.type == "workflow.advanced":
            monkeypatch.setattr(store, "append", append)
            raise redis.ConnectionError("worker lost")
        return append(event, dedupe_key, expect=expect)

    monkeypatch.setattr(store, "append", dying_append)


def test_a_redelivered_submit_finishes_its_own_half_done_step(
    make_ctx: Ctx, wf_store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """acks_late redelivery: the same call id runs again and gets the answer it would have had."""
    start, ctx = started(make_ctx), make_ctx()
    args = SubmitThoughtArgs(state_id=start.state_id, thought="a\nb", version=start.version)
    crash_before_the_advance(wf_store, monkeypatch)
    with pytest.raises(redis.ConnectionError):
        jobs.submit_thought(args, ctx)

    answer = jobs.submit_thought(args, ctx)

    assert (answer.step, answer.version) == ("analyze_first", 3)
    assert submitted_steps(wf_store, start.state_id) == ["decompose"]


def test_another_call_finishes_a_half_done_step_and_is_told_the_run_moved_on(
    make_ctx: Ctx, wf_store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = started(make_ctx)
    crash_before_the_advance(wf_store, monkeypatch)
    with pytest.raises(redis.ConnectionError):
        jobs.submit_thought(SubmitThoughtArgs(state_id=start.state_id, thought="a\nb"), make_ctx())

    with pytest.raises(JobFailed) as caught:
        jobs.submit_thought(SubmitThoughtArgs(state_id=start.state_id, thought="late"), make_ctx())

    assert caught.value.code == "workflow.version_conflict"
    shown = jobs.get_workflow_state(GetWorkflowStateArgs(state_id=start.state_id), make_ctx())
    assert (shown.step, shown.version, shown.saved["decomposition"]) == ("analyze_first", 3, ["a", "b"])


def test_a_redelivered_start_returns_the_same_run(make_ctx: Ctx, wf_store: EventStore) -> None:
    ctx = make_ctx()
    args = StartChainOfThoughtArgs(problem="p")

    first, again = jobs.start_chain_of_thought(args, ctx), jobs.start_chain_of_thought(args, ctx)

    assert first == again
    assert [e.type for e in events(wf_store, first.state_id)] == ["workflow.started"]
