"""Issue 15: one gate for every call path. A justification that expired under its domain's time to live is reported
the same way through a client's call (the gateway), an `ask` (the LLM host's tool caller) and a result handler's
chained call, and each path records the expiry; a domain's own TTL applies to all three.

Real Redis; the three paths are the production entry points, not the gate called directly.
"""

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from gateway.preflight.flow import preflight
from gateway.preflight.gate import Gate
from geogate.calls.keys import Keys, celery_queue_key
from geogate.calls.store import AsyncEventStore, EventStore
from geogate.queue.message import envelope_args
from geogate.settings import Settings
from schemas.call_plan import plan_call
from schemas.codec import decode
from schemas.events import Event, ToolRequested, ToolSucceeded
from schemas.events.justification import JustificationPersisted, justification_aggregate
from schemas.ids import call_aggregate, new_id
from schemas.preflight.keys import needed_for
from schemas.tools import TOOLS
from tests.support import JUSTIFICATION
from workers.jobkit.context import JobContext
from workers.llm.job import ConversationLog, ToolCaller
from workers.sandbox.job import _Call, _call_tool

SPEC = TOOLS["vector_reproject"]
ARGS = {"uri": "points.gpkg", "output": "out.gpkg", "dst_crs": "EPSG:3035"}
AGE_S = 120.0
SHORT = Settings(redis_url="redis://x", justification_ttl_s={"crs_datum": 60.0})
"""The default TTL (30 days) would keep a two-minute-old justification valid; `crs_datum`'s own 60 s does not."""
LONG = Settings(redis_url="redis://x", justification_ttl_s={"crs_datum": 600.0}, justification_default_ttl_s=1.0)
"""And the other way round: the default (1 s) would expire it; the domain's 600 s keeps it."""


def _client(store: EventStore, settings: Settings, url: str) -> dict[str, Any]:
    """`tools/call` at the gateway with no sampling client: the gate answers with its hint, or lets the call through."""

    async def run() -> dict[str, Any]:
        client = aredis.Redis.from_url(url)
        try:
            gate = Gate(AsyncEventStore(client, store.keys), settings)
            outcome = await preflight(gate, plan_call(SPEC, ARGS), None, "alice")
        finally:
            await client.aclose()
        if outcome.answer is None:
            return {"passed": outcome.justified_by}
        return {"refused": outcome.answer.structured_content["preflight"]["required"]}

    return asyncio.run(run())


def _ask(store: EventStore, settings: Settings, url: str) -> dict[str, Any]:
    """A tool call the `ask` loop makes: `ToolCaller` as the LLM job builds it."""
    ctx = JobContext(call_id=new_id(), roots=[], actor="alice", store=store, settings=settings)
    caller = ToolCaller(store, ctx, ConversationLog(store, ctx, "0", None), timeout_s=0.05)
    result, _text, is_error = asyncio.run(caller(SPEC.name, dict(ARGS)))
    error = result["error"]
    assert is_error
    if error["code"] == "preflight.required":
        return {"refused": error["preflight"]["required"]}
    assert error["code"] == "call.timeout"  # let through and published: no worker runs it in this test
    return {"passed": _requested(store)}


def _handler(store: EventStore, settings: Settings, url: str) -> dict[str, Any]:
    """A result handler's chained call: the callback the handler job gives the sandbox's tool bridge."""
    ctx = JobContext(call_id=new_id(), roots=[], actor="alice", store=store, settings=settings)
    own = ToolRequested(call_id=ctx.call_id, tool="raster_info", queue="gdal", args={}, timeout_s=1)
    done = ToolSucceeded(call_id=ctx.call_id, result={}, worker="w", duration_ms=1)
    call = _Call(_event(call_aggregate(ctx.call_id), own), _event(call_aggregate(ctx.call_id), done))
    try:
        _call_tool(ctx, call)(SPEC.name, dict(ARGS))
    except Exception as exc:  # the bridge turns the callback's exception into the handler's ToolError
        if getattr(exc, "code", None) == "preflight.required":
            return {"refused": exc.required}  # type: ignore[attr-defined]
        assert getattr(exc, "code", None) == "call.timeout", exc
    return {"passed": _requested(store)}


PATHS: dict[str, Callable[[EventStore, Settings, str], dict[str, Any]]] = {
    "client call": _client,
    "ask": _ask,
    "handler chain": _handler,
}


def _event(aggregate: str, data: Any, ts: datetime | None = None) -> Event:
    return Event(id=new_id(), aggregate=aggregate, ts=ts or datetime.now(UTC), trace_id="t", actor="alice", data=data)


def _requested(store: EventStore) -> list[str]:
    calls = [e.event.data for e in store.read("calls") if e.event.type == "tool.requested"]
    return [h for data in calls for h in data.justified_by]


@pytest.fixture
def aged(redis_url: str) -> Iterator[tuple[EventStore, str]]:
    """A store whose cache holds the call's justification, persisted two minutes ago; the calls it lets through
    are taken off the session Redis's queue afterwards."""
    store = EventStore(redis.Redis.from_url(redis_url), Keys(f"t{new_id()[-8:]}"))
    needed = needed_for(SPEC, ARGS)[0]
    data = JustificationPersisted(
        hash=needed.hash, domain=needed.domain, prompt=needed.prompt, prompt_args=needed.prompt_args,
        justification=JUSTIFICATION,
    )  # fmt: skip
    then = datetime.now(UTC) - timedelta(seconds=AGE_S)
    store.append(_event(justification_aggregate(needed.hash), data, then), f"persisted-{needed.hash}")
    yield store, needed.hash
    unqueue(store)


def unqueue(store: EventStore) -> None:
    """Take this store's calls off the queue they were published to. The queue is a plain list of the session's
    Redis, shared with every later test: the integration stack's worker would run them under its own prefix, and
    its log would hold outcomes of calls it never saw requested."""
    mine = {e.event.data.call_id for e in store.read("calls") if isinstance(e.event.data, ToolRequested)}
    queue = celery_queue_key(SPEC.queue)
    for raw in store.redis.lrange(queue, 0, -1):
        if decode(envelope_args(json.loads(raw))[0]).data.call_id in mine:  # type: ignore[index, arg-type, union-attr]
            store.redis.lrem(queue, 1, raw)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_expired_justification_is_reported_and_recorded_alike_on_every_path(
    path: str, aged: tuple[EventStore, str], redis_url: str
) -> None:
    store, digest = aged

    seen = PATHS[path](store, SHORT, redis_url)

    assert [item["hash"] for item in seen["refused"]] == [digest]
    assert seen["refused"][0]["domain"] == "crs_datum" and seen["refused"][0]["messages"]
    kinds = [e.event.type for e in store.read("justifications")]
    assert kinds == ["justification.persisted", "justification.expired", "preflight.required"]
    assert store.read("calls") == []


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_domain_ttl_longer_than_the_default_lets_the_call_through_on_every_path(
    path: str, aged: tuple[EventStore, str], redis_url: str
) -> None:
    store, digest = aged

    seen = PATHS[path](store, LONG, redis_url)

    assert seen["passed"] == [digest]
    assert [e.event.type for e in store.read("justifications")] == ["justification.persisted"]
