"""The handler job on the call path (issue 5): enqueued with `tool.succeeded`, `handler.*` events, idempotent."""

import base64
import json
from pathlib import Path
from typing import Any

import msgpack
import pytest

from geogate.calls import keys
from geogate.calls.projections.handlers import HandlerState
from geogate.calls.publish import request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import decode, encode
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from workers.run import runner
from workers.sandbox.job import chainable
from workers.tools import load_all

load_all()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(redis_url="redis://unused", workspaces=str(tmp_path))


def publish(store: EventStore, handler: dict[str, Any] | None) -> tuple[str, bytes]:
    call_id = new_id()
    event = request_event(TOOLS["ping"], {"queue": "gdal"}, call_id=call_id, actor="tester", result_handler=handler)
    store.append(event, keys.requested_key(call_id))
    return call_id, encode(event)


def sandbox_payloads(store: EventStore) -> list[bytes]:
    """The `run_call` payloads waiting on the sandbox queue, decoded from kombu's Redis envelope."""
    payloads = []
    for raw in store.redis.lrange(keys.celery_queue_key("sandbox"), 0, -1):
        envelope = json.loads(raw)
        body = base64.b64decode(envelope["body"])
        args, _kwargs, _embed = msgpack.unpackb(body)
        payloads.append(args[0])
    return payloads


def types_of(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


def test_a_call_with_a_handler_keeps_its_raw_output_and_enqueues_the_handler_with_its_outcome(
    fake_store: EventStore, settings: Settings
) -> None:
    call_id, payload = publish(fake_store, {"language": "jmespath", "script": "worker"})

    runner.run_call(fake_store, settings, "host:1", payload)

    state = fake_store.call_state(call_id)
    assert state is not None and state.output_ref is not None and state.result is None
    assert json.loads(fake_store.get_blob(state.output_ref))["worker"] == "host:1"
    [command] = sandbox_payloads(fake_store)
    assert decode(command).data.tool == "run_result_handler" and decode(command).aggregate == call_aggregate(call_id)


def test_a_call_without_a_handler_enqueues_nothing(fake_store: EventStore, settings: Settings) -> None:
    _call_id, payload = publish(fake_store, None)

    runner.run_call(fake_store, settings, "host:1", payload)

    assert sandbox_payloads(fake_store) == []


def test_the_handler_job_appends_started_and_succeeded_on_the_call_once(
    fake_store: EventStore, settings: Settings
) -> None:
    """A redelivered handler job finds the outcome and appends nothing (acks_late)."""
    call_id, payload = publish(fake_store, {"language": "jmespath", "script": "{w: worker, q: queue}"})
    runner.run_call(fake_store, settings, "host:1", payload)
    [command] = sandbox_payloads(fake_store)

    runner.run_call(fake_store, settings, "host:2", command)
    runner.run_call(fake_store, settings, "host:3", command)

    assert types_of(fake_store, call_id)[-2:] == ["handler.started", "handler.succeeded"]
    assert types_of(fake_store, call_id).count("handler.started") == 1
    state = HandlerState.from_hash(call_id, fake_store.redis.hgetall(fake_store.live.handler(call_id)))
    assert state is not None and state.status == "succeeded" and state.value == {"w": "host:1", "q": "gdal"}


def test_a_failing_jmespath_handler_appends_handler_failed_with_the_raw_reference(
    fake_store: EventStore, settings: Settings
) -> None:
    call_id, payload = publish(fake_store, {"language": "jmespath", "script": "worker[?"})
    runner.run_call(fake_store, settings, "host:1", payload)

    runner.run_call(fake_store, settings, "host:2", sandbox_payloads(fake_store)[0])

    failed = fake_store.read_aggregate(call_aggregate(call_id))[-1].data
    assert failed.type == "handler.failed" and failed.code == "handler.syntax_error" and failed.line == 1
    assert failed.raw is not None and failed.raw == fake_store.call_state(call_id).output_ref


def test_chaining_offers_read_only_tools_and_never_the_handlers_own_tool() -> None:
    allowed = chainable("raster_stats")

    assert "raster_info" in allowed and "raster_stats" not in allowed
    assert all(TOOLS[name].hints.read_only for name in allowed) and "raster_convert" not in allowed
