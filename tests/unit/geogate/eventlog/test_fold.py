"""The replay fold (`geogate.eventlog.fold`, ops applied in Python) against the live path (`_append.lua`, ops
applied in the append script): over random event sequences, in any order, both leave the same keys, contents and
expiries.

Real redis-server: the live side is the script as production runs it.
"""

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geogate.calls.keys import Keys, ProjectionKeys
from geogate.calls.store import EventStore
from geogate.eventlog.append import Op
from geogate.eventlog.fold import Keyspace, UnfoldableOp, write_all
from geogate.eventlog.replay import iter_log
from schemas.events import (
    CallRejected,
    EventData,
    HandlerFailed,
    HandlerStarted,
    HandlerSucceeded,
    JustificationExpired,
    JustificationPersisted,
    JustificationRevoked,
    OutputRef,
    PreflightRequired,
    ToolCancelRequested,
    ToolFailed,
    ToolFanInStarted,
    ToolFannedOut,
    ToolInputProvided,
    ToolInputRequested,
    ToolProgress,
    ToolRedispatched,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.events.justification import justification_aggregate
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted, conversation_aggregate
from schemas.events.security import client_aggregate
from schemas.events.workflow import workflow_aggregate
from schemas.ids import call_aggregate, new_id
from schemas.tools.tiling import tile_call_id
from tests.support import JUSTIFICATION, make_event

RAW = OutputRef(uri="blob://sha256:ab", size=10, sha256="ab")
PARENT = "01PARENT"
CALLS = ["01A", "01B", PARENT, tile_call_id(PARENT, 0), tile_call_id(PARENT, 1)]
LATER = datetime(2100, 1, 1, tzinfo=UTC)
FOLD_DB = 7


def _call_events(call_id: str, r: random.Random) -> list[EventData]:
    """Every call-family payload for `call_id`, with random values; the test picks among them in any order."""
    attempt, worker = r.choice(["a1", "a2"]), r.choice(["w1", "w2"])
    return [
        ToolRequested(call_id=call_id, tool=r.choice(["ping", "tiles"]), queue="gdal", args={"n": r.randint(0, 3)},
                      timeout_s=30, result_handler=r.choice([None, {"script": "1"}]),
                      justified_by=["j"][: r.randint(0, 1)]),
        ToolStarted(call_id=call_id, worker=worker, attempt=attempt, queue_wait_ms=r.random() * 9, lease="l" + attempt),
        ToolProgress(call_id=call_id, progress=r.randint(0, 3), total=r.choice([None, 3.0]),
                     message=r.choice([None, "m"])),
        ToolSucceeded(call_id=call_id, result={"v": r.random()}, text="ok", duration_ms=r.random() * 9, worker=worker,
                      output_ref=r.choice([None, RAW])),
        ToolFailed(call_id=call_id, code=r.choice(["x", "cancelled"]), message="no", duration_ms=r.random(),
                   worker=r.choice(["", worker]), field=r.choice([None, "f"])),
        ToolCancelRequested(call_id=call_id, reason=r.choice(["r1", "r2"])),
        ToolRedispatched(call_id=call_id, stage=r.choice(["tool", "handler", "fan_in"]), dispatch=r.randint(2, 4),
                         lost_worker=worker, lost_lease="l", lost_attempt=attempt, reason="lapsed"),
        ToolFannedOut(call_id=call_id, tiles=2, columns=2, rows=1, tile_size=256, width=512, height=256, folder="f"),
        ToolFanInStarted(call_id=call_id, worker=worker, attempt=attempt, lease="l"),
        ToolInputRequested(call_id=call_id, requests={r.choice(["k1", "k2"]): {"q": 1}}),
        ToolInputProvided(call_id=call_id, key=r.choice(["k1", "k2"]), response=r.randint(0, 9)),
        HandlerStarted(call_id=call_id, language="python", worker=worker, attempt=attempt),
        HandlerSucceeded(call_id=call_id, value=r.randint(0, 9), value_bytes=1, raw=RAW, language="python",
                         isolation="bwrap", duration_ms=r.random()),
        HandlerFailed(call_id=call_id, code="handler.exception", message="x", language="python"),
    ]  # fmt: skip


def _other_events(r: random.Random) -> list[tuple[str, EventData]]:
    """The other families' payloads (workflows, justifications, conversations, rejected calls)."""
    state, digest, conversation, version = "s1", "d1", "c1", r.randint(1, 4)
    wf, just, conv, args = workflow_aggregate(state), justification_aggregate(digest), conversation_aggregate("c1"), {}
    return [
        (wf, WorkflowStarted(state_id=state, workflow="w", step="a", instruction="i", ttl_s=60, expires_at=LATER)),
        (wf, WorkflowThoughtSubmitted(state_id=state, version=version, step="a", text=r.choice(["t", "u"]))),
        (wf, WorkflowAdvanced(state_id=state, version=version, from_step="a", step="b", step_number=2,
                              instruction="j", expires_at=LATER)),
        (wf, WorkflowCompleted(state_id=state, version=version, step="b")),
        (wf, WorkflowExpired(state_id=state, version=version, step="b", idle_s=1.0)),
        (just, PreflightRequired(hash=digest, domain="crs", prompt="p", prompt_args=args, tool="warp")),
        (just, JustificationPersisted(hash=digest, domain="crs", prompt="p", prompt_args=args,
                                      justification=JUSTIFICATION)),
        (just, JustificationRevoked(hash=digest)),
        (just, JustificationExpired(hash=digest)),
        (conv, LLMConversationStarted(conversation_id=conversation, model="m", provider="openai", mode="prompt")),
        (conv, LLMAttempted(conversation_id=conversation, turn=1, attempt=r.randint(1, 2), model="m",
                            provider="openai", temperature=0.7, outcome="answer")),
        (conv, LLMConversationFinished(conversation_id=conversation, outcome="answered", attempts=1, tool_calls=0,
                                       total_ms=3.0)),
        (client_aggregate("c"), CallRejected(client_id="c", method="tools/call", reason="rate_limit")),
    ]  # fmt: skip


def _picked(seed: int, length: int) -> list[tuple[str, EventData, datetime]]:
    r, now = random.Random(seed), datetime.now(UTC)
    out: list[tuple[str, EventData, datetime]] = [(call_aggregate("01A"), _call_events("01A", r)[0], now)]
    for _ in range(length):
        if r.random() < 0.8:
            call_id = r.choice(CALLS)
            aggregate, data = call_aggregate(call_id), r.choice(_call_events(call_id, r))
        else:
            aggregate, data = r.choice(_other_events(r))
        # some events old enough that the finished call's expiry has already passed
        out.append((aggregate, data, now - timedelta(seconds=r.choice([0, 0, 0, 7200]))))
    return out


def _content(client: redis.Redis, key: str) -> tuple[Any, ...]:
    kind = client.type(key).decode()
    read = {
        "hash": client.hgetall,
        "list": lambda k: client.lrange(k, 0, -1),
        "set": lambda k: sorted(client.smembers(k)),
        "string": client.get,
    }[kind]
    return kind, read(key), client.pexpiretime(key)


def _namespace(client: redis.Redis, keys: ProjectionKeys) -> dict[str, tuple[Any, ...]]:
    found = [k.decode() for k in client.scan_iter(match=keys.pattern(), count=1000)]
    return {k.removeprefix(keys.base): _content(client, k) for k in found}


@pytest.fixture
def live_store(redis_url: str) -> Iterator[EventStore]:
    """A store on a database of its own: tiles' outcomes push fan-in jobs onto the `gdal` queue list, which the
    integration stack, on the session Redis's database 0, must find empty."""
    client = redis.Redis.from_url(redis_url, db=FOLD_DB)
    yield EventStore(client, Keys(f"t{new_id()[-8:]}", finished_ttl_s=3600))
    client.flushdb()


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), length=st.integers(1, 60), batch=st.integers(1, 25))
def test_the_python_fold_leaves_the_keys_the_append_script_leaves(
    live_store: EventStore, seed: int, length: int, batch: int
) -> None:
    store = EventStore(live_store.redis, Keys(f"t{new_id()[-8:]}", finished_ttl_s=3600))
    for n, (aggregate, data, ts) in enumerate(_picked(seed, length)):
        event = make_event(aggregate, data, actor=f"a{n % 3}").model_copy(update={"ts": ts})
        store.append(event, f"k{n}")  # a key each: every event lands, whatever its order
    target = store.keys.projections("folded")
    keyspace = Keyspace.over(store.redis, target, store.projectors.ops)
    events = list(iter_log(store))

    for i in range(0, len(events), batch):  # flushed between batches: keys are read back, as in a long replay
        keyspace.fold(events[i : i + batch])
        write_all(store.redis, keyspace.changes())

    live, folded = _namespace(store.redis, store.live), _namespace(store.redis, target)
    assert live == folded
    assert live  # the first event, counted in the metrics hash, made some projection


def test_an_op_the_fold_cannot_apply_is_refused_by_name(real_store: EventStore) -> None:
    keyspace = Keyspace.over(real_store.redis, real_store.keys.projections("folded"), real_store.projectors.ops)

    with pytest.raises(UnfoldableOp, match="ZADD"):
        keyspace.apply(Op("ZADD", "k", (1, "m")), b"1-0")
