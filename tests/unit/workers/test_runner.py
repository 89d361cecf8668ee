"""The call lifecycle on a worker (`run_call`), without Celery: events are what the log says."""

from pathlib import Path

import pytest
from pydantic import BaseModel

from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolCancelRequested
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from tests.support import make_event
from workers.jobkit.context import JobContext
from workers.jobkit.errors import JobFailed
from workers.jobs import JOBS
from workers.run import runner
from workers.tools import load_all

load_all()


def publish(store: EventStore, tool: str = "ping", **args: object) -> tuple[str, bytes]:
    spec = TOOLS[tool]
    valid = spec.args.model_validate(args).model_dump(mode="json")
    call_id = new_id()
    event = request_event(spec, valid, call_id=call_id, actor="tester")
    store.append(event, keys.requested_key(call_id))
    return call_id, encode(event)


def types_of(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(redis_url="redis://unused", workspaces=str(tmp_path), inline_result_max_bytes=200)


def test_a_call_runs_through_started_and_succeeded(fake_store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)

    assert types_of(fake_store, call_id) == ["tool.requested", "tool.started", "tool.succeeded"]
    state = fake_store.call_state(call_id)
    assert state is not None and state.status == "succeeded" and state.result["worker"] == "host:1"


def test_a_redelivered_call_appends_no_second_outcome(fake_store: EventStore, settings: Settings) -> None:
    """acks_late redelivery after the outcome landed: refused at `tool.started`, nothing else appended."""
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)
    runner.run_call(fake_store, settings, "host:2", payload)

    assert types_of(fake_store, call_id) == ["tool.requested", "tool.started", "tool.succeeded"]


def test_a_job_failure_becomes_tool_failed_with_code_and_field(fake_store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(fake_store, "raster_info", uri="../etc/passwd")

    runner.run_call(fake_store, settings, "host:1", payload)

    failed = fake_store.read_aggregate(call_aggregate(call_id))[-1].data
    assert (failed.type, failed.code, failed.field) == ("tool.failed", "path.outside_workspace", "uri")


def test_a_crashing_job_becomes_tool_failed_without_its_trace(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(args: BaseModel, ctx: JobContext) -> BaseModel:
        raise ZeroDivisionError("secret internals")

    monkeypatch.setitem(JOBS, "ping", explode)
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)

    failed = fake_store.read_aggregate(call_aggregate(call_id))[-1].data
    assert failed.code == "job.crashed" and "secret" not in failed.message and call_id in failed.message


def test_a_call_cancelled_before_it_starts_never_runs(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = []
    monkeypatch.setitem(JOBS, "ping", lambda args, ctx: ran.append(1))
    call_id, payload = publish(fake_store)
    fake_store.append(make_event(call_aggregate(call_id), ToolCancelRequested(call_id=call_id)), "c")

    runner.run_call(fake_store, settings, "host:1", payload)

    assert ran == [] and fake_store.call_state(call_id).error_code == "cancelled"


def test_cancellation_stops_a_running_job_at_its_next_progress_report(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = []

    def blocks(args: BaseModel, ctx: JobContext) -> BaseModel:
        for n in range(5):
            steps.append(n)
            if n == 1:
                fake_store.append(
                    make_event(call_aggregate(ctx.call_id), ToolCancelRequested(call_id=ctx.call_id)), "c"
                )
            ctx.progress(n + 1, 5)
        raise AssertionError("not cancelled")

    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.0)
    monkeypatch.setitem(JOBS, "ping", blocks)
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)

    assert steps == [0, 1] and fake_store.call_state(call_id).error_code == "cancelled"


def test_a_large_result_is_stored_by_reference_not_in_the_event(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Big(BaseModel):
        values: list[int]

    monkeypatch.setitem(JOBS, "ping", lambda args, ctx: Big(values=list(range(500))))
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)

    outcome = fake_store.read_aggregate(call_aggregate(call_id))[-1].data
    assert outcome.result is None and outcome.output_ref is not None
    assert fake_store.get_blob(outcome.output_ref).startswith(b'{"values":[0,1,2')


def test_an_unknown_tool_fails_cleanly(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(JOBS, "ping")
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)

    assert fake_store.call_state(call_id).error_code == "tool.unknown"


def test_job_failed_keeps_retryable(
    fake_store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(args: BaseModel, ctx: JobContext) -> BaseModel:
        raise JobFailed("busy", "try later", retryable=True)

    monkeypatch.setitem(JOBS, "ping", busy)
    call_id, payload = publish(fake_store)

    runner.run_call(fake_store, settings, "host:1", payload)

    assert fake_store.read_aggregate(call_aggregate(call_id))[-1].data.retryable is True
