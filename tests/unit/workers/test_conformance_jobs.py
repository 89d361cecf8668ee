"""The conformance fixtures' jobs through the real lifecycle (`run_call`, no Celery): what the log says of each call."""

from pathlib import Path

import pytest

from gateway.results import from_state
from geogate.calls import keys
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import ToolInputProvided, ToolLogged, ToolSucceeded
from schemas.events.tool import ClientCapability
from schemas.ids import call_aggregate, new_id
from schemas.tools import SPECS
from schemas.tools.extra import load as load_extra
from tests.conformance.fixtures import SPECS as FIXTURE_SPECS
from tests.conformance_suite import FIXTURES
from tests.support import make_event
from workers.run import runner
from workers.tools import load_all

JOBS = load_all()
load_extra(FIXTURES).load_jobs()  # what a worker started with GEOGATE_EXTRA_TOOLS does (`workers.app.configure`)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(redis_url="redis://unused", workspaces=str(tmp_path), heartbeat_s=0.2)


def publish(
    store: EventStore, tool: str, can: list[ClientCapability] | None = None, **args: object
) -> tuple[str, bytes]:
    spec = SPECS[tool]
    valid = spec.args.model_validate(args).model_dump(mode="json")
    call_id = new_id()
    event = request_event(spec, valid, call_id=call_id, actor="tester", client_capabilities=can)
    store.append(event, keys.requested_key(call_id))
    return call_id, encode(event)


def types_of(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


def test_every_fixture_spec_has_a_job() -> None:
    assert {spec.name for spec in FIXTURE_SPECS} <= set(JOBS)


def test_media_a_job_returns_is_in_its_outcome_and_in_the_rebuilt_answer(
    fake_store: EventStore, settings: Settings
) -> None:
    call_id, payload = publish(fake_store, "test_multiple_content_types")

    runner.run_call(fake_store, settings, "host:1", payload)

    assert types_of(fake_store, call_id) == ["tool.requested", "tool.started", "tool.succeeded"]
    outcome = fake_store.read_aggregate(call_aggregate(call_id))[-1].payload(ToolSucceeded)
    assert [b.type for b in outcome.content] == ["text", "image", "resource"]
    state = fake_store.call_state(call_id)
    assert state is not None and state.content == outcome.content
    rebuilt = from_state(state)  # what tasks/get and a duplicate call answer
    assert [b.type for b in rebuilt.content] == ["text", "text", "image", "resource", "text"]
    image = rebuilt.content[2]
    assert image.type == "image" and image.mime_type == "image/png" and image.data.startswith("iVBORw0KGgo")


def test_log_lines_for_the_client_are_events_of_the_call(fake_store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(fake_store, "test_tool_with_logging")

    runner.run_call(fake_store, settings, "host:1", payload)

    events = fake_store.read_aggregate(call_aggregate(call_id))
    lines = [e.payload(ToolLogged).message for e in events if e.type == "tool.logged"]
    assert lines == [f"test_tool_with_logging: {step}" for step in ("started", "halfway", "done")]
    assert events[-1].type == "tool.succeeded"


def test_a_job_never_asks_what_the_client_cannot_answer(fake_store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(fake_store, "test_input_required_result_elicitation", can=["sampling"])

    runner.run_call(fake_store, settings, "host:1", payload)

    assert types_of(fake_store, call_id) == ["tool.requested", "tool.started", "tool.failed"]
    state = fake_store.call_state(call_id)
    assert state is not None and state.error_code == "input.unsupported"


def test_a_job_asks_only_what_the_client_declared(fake_store: EventStore, settings: Settings) -> None:
    """`test_input_required_result_capabilities` with a client that can sample but shows no forms."""
    call_id, payload = publish(fake_store, "test_input_required_result_capabilities", can=["sampling"])
    answer = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
    early = make_event(call_aggregate(call_id), ToolInputProvided(call_id=call_id, key="hello", response=answer))
    fake_store.append(early, keys.input_answer_key(call_id, "hello"))  # the answer is in before the job asks

    runner.run_call(fake_store, settings, "host:1", payload)

    events = fake_store.read_aggregate(call_aggregate(call_id))
    asked = [e.data for e in events if e.type == "tool.input_requested"]
    assert len(asked) == 1 and set(asked[0].requests) == {"hello"}
    assert asked[0].requests["hello"]["method"] == "sampling/createMessage"
    assert events[-1].payload(ToolSucceeded).text == "answered: hello"
