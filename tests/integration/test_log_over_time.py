"""Issue 16: the log over weeks. Replay while calls keep arriving, replay after trims (snapshots), every event type,
and bounded projections, each checked against what the log itself says (counted here, not by the projectors) and
against what clients saw. Real Redis."""

import random
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import redis

from geogate.calls import keys
from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from geogate.eventlog.keys import all_categories
from geogate.eventlog.replay import replay
from geogate.eventlog.retention import trim
from geogate.eventlog.snapshots import positions
from geogate.settings import RetentionPolicy
from schemas.codec import decode
from schemas.events import (
    HandlerFailed,
    HandlerStarted,
    HandlerSucceeded,
    JustificationExpired,
    JustificationPersisted,
    JustificationRevoked,
    OutputRef,
    PreflightRequired,
    ToolRequested,
    ToolSucceeded,
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.events.justification import justification_aggregate
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted, conversation_aggregate
from schemas.events.security import CallRejected, client_aggregate
from schemas.events.workflow import workflow_aggregate
from schemas.ids import call_aggregate, new_id
from tests.integration.test_replay import lifecycle
from tests.support import JUSTIFICATION, make_event

pytestmark = pytest.mark.integration

COUNTED = ("tool.requested", "tool.started", "tool.succeeded", "tool.failed", "tool.cancel_requested",
           "tool.redispatched", "call.rejected")  # fmt: skip
"""The event types the metrics projection counts (`events:<type>`), spelled here again on purpose."""

RAW = OutputRef(uri="blob://sha256:ab", size=10, sha256="ab")


def other_families(store: EventStore, rng: random.Random) -> int:
    """One of every other family's events: a handler run, a workflow, a justification, an LLM conversation, a
    rejected client call."""
    call_id, digest, state_id, n = new_id(), new_id(), new_id(), 0

    def add(aggregate: str, data: object, key: str) -> None:
        nonlocal n
        store.append(make_event(aggregate, data, actor=rng.choice(["alice", "bob"])), key)  # type: ignore[arg-type]
        n += 1

    call = call_aggregate(call_id)
    add(
        call,
        ToolRequested(
            call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=30, result_handler={"script": "1"}
        ),
        keys.requested_key(call_id),
    )
    add(call, ToolSucceeded(call_id=call_id, output_ref=RAW, duration_ms=1.0), keys.outcome_key(call_id))
    add(
        call,
        HandlerStarted(call_id=call_id, language="python", worker="w", attempt="a"),
        keys.handler_started_key(call_id, "a"),
    )
    if rng.random() < 0.5:
        done = HandlerSucceeded(
            call_id=call_id, value=1, value_bytes=1, raw=RAW, language="python", isolation="bwrap", duration_ms=2.0
        )
    else:
        done = HandlerFailed(call_id=call_id, code="handler.exception", message="x", language="python")
    add(call, done, keys.handler_outcome_key(call_id))
    wf, later = workflow_aggregate(state_id), datetime.now(UTC) + timedelta(hours=1)
    add(
        wf,
        WorkflowStarted(state_id=state_id, workflow="w", step="a", instruction="i", ttl_s=60, expires_at=later),
        keys.workflow_version_key(state_id, 1),
    )
    add(
        wf,
        WorkflowThoughtSubmitted(state_id=state_id, version=2, step="a", text="t"),
        keys.workflow_version_key(state_id, 2),
    )
    add(
        wf,
        WorkflowAdvanced(
            state_id=state_id, version=3, from_step="a", step="b", step_number=2, instruction="j", expires_at=later
        ),
        keys.workflow_version_key(state_id, 3),
    )
    add(wf, WorkflowCompleted(state_id=state_id, version=4, step="b"), keys.workflow_version_key(state_id, 4))
    jf, args = justification_aggregate(digest), {"dst": "EPSG:3857"}
    add(
        jf,
        PreflightRequired(hash=digest, domain="crs_datum", prompt="p", prompt_args=args, tool="raster_reproject"),
        keys.justification_required_key(digest, "r"),
    )
    add(
        jf,
        JustificationPersisted(
            hash=digest, domain="crs_datum", prompt="p", prompt_args=args, justification=JUSTIFICATION
        ),
        keys.justification_persisted_key(digest, "p"),
    )
    add(
        jf,
        rng.choice([JustificationRevoked(hash=digest), JustificationExpired(hash=digest)]),
        keys.justification_revoked_key(digest, "x"),
    )
    conv = conversation_aggregate(call_id)
    add(
        conv,
        LLMConversationStarted(conversation_id=call_id, model="m", provider="openai", mode="prompt"),
        keys.conversation_step_key(call_id, "0", "started"),
    )
    add(
        conv,
        LLMAttempted(
            conversation_id=call_id, turn=1, attempt=1, model="m", provider="openai", temperature=0.7, outcome="answer"
        ),
        keys.conversation_step_key(call_id, "0", "attempt"),
    )
    add(
        conv,
        LLMConversationFinished(conversation_id=call_id, outcome="answered", attempts=1, tool_calls=0, total_ms=3.0),
        keys.conversation_step_key(call_id, "0", "finished"),
    )
    client = rng.choice(["alice", "bob", "carol"])
    add(
        client_aggregate(client),
        CallRejected(client_id=client, method="tools/call", reason="rate_limit"),
        keys.rejected_key(client, "rate_limit", rng.randint(0, 10**9)),
    )
    return n  # fmt: skip


def activity(store: EventStore, rng: random.Random) -> int:
    return lifecycle(store, rng) + (other_families(store, rng) if rng.random() < 0.3 else 0)


def log_says(store: EventStore) -> dict[str, object]:
    """What the raw log says, counted here without the projectors: events per aggregate, each call's outcome, and
    the number of events of each type."""
    per_aggregate: Counter[str] = Counter()
    outcome: dict[str, str] = {}
    types: Counter[str] = Counter()
    for category in all_categories():
        for _id, fields in store.redis.xrange(store.keys.stream(category)):
            event = decode(fields[b"event"])
            per_aggregate[event.aggregate] += 1
            types[event.type] += 1
            if event.type in ("tool.succeeded", "tool.failed"):
                outcome.setdefault(event.aggregate.split(":", 1)[1], event.type.split(".")[1])
    counted = Counter({t: n for t, n in types.items() if t in COUNTED})
    return {"per_aggregate": per_aggregate, "outcome": outcome, "types": counted}


def projections_say(store: EventStore, said: dict[str, object]) -> dict[str, object]:
    """The same figures read from the projections: index lengths, call statuses and the metrics counters."""
    per_aggregate = Counter({a: store.redis.llen(store.live.index(a)) for a in said["per_aggregate"]})  # type: ignore[attr-defined]
    outcome = {c: (store.redis.hget(store.live.call(c), "status") or b"").decode() for c in said["outcome"]}  # type: ignore[attr-defined]
    metrics = {k.decode(): int(v) for k, v in store.redis.hgetall(store.live.metrics()).items()}
    types = Counter({t: metrics.get(f"events:{t}", 0) for t in said["types"] if t in COUNTED})  # type: ignore[attr-defined]
    return {"per_aggregate": per_aggregate, "outcome": outcome, "types": types}


@pytest.fixture
def store(redis_url: str) -> EventStore:
    return EventStore(redis.Redis.from_url(redis_url), Keys(f"t{new_id()[-8:]}"))


def test_replay_while_calls_keep_arriving_loses_and_doubles_nothing(store: EventStore) -> None:
    rng = random.Random(16)
    for _ in range(300):
        activity(store, rng)
    stop, errors = threading.Event(), []

    def load(seed: int) -> None:
        writer, local = (
            EventStore(redis.Redis(connection_pool=store.redis.connection_pool), store.keys),
            random.Random(seed),
        )
        try:
            while not stop.wait(0.02):  # a steady load: three clients, each starting a call every 20 ms
                activity(writer, local)
        except Exception as exc:  # surfaced below: a failing writer must fail the test
            errors.append(exc)

    writers = [threading.Thread(target=load, args=(seed,)) for seed in (1, 2, 3)]
    for writer in writers:
        writer.start()
    try:
        swapped = replay(store)  # rebuild, catch up and swap while three writers append
        swapped_again = replay(store)
    finally:
        stop.set()
        for writer in writers:
            writer.join()

    assert errors == []
    assert swapped.events > 0 and swapped_again.events > swapped.events
    assert replay(store, swap=False).identical
    said = log_says(store)
    assert projections_say(store, said) == said


def test_replay_check_holds_after_any_number_of_trims(store: EventStore) -> None:
    rng = random.Random(7)
    seen: dict[str, bytes | None] = {}
    for round_ in range(3):
        for _ in range(150):
            activity(store, rng)
        seen |= {key.decode(): store.redis.hget(key, "status") for key in store.redis.scan_iter(store.live.call("*"))}
        removed = trim(store, RetentionPolicy(maxlen=200))
        assert sum(removed.values()) > 0, f"round {round_} trimmed nothing"
        assert positions(store)  # a snapshot holds what was trimmed

    report = replay(store, swap=False)

    assert report.identical and report.from_snapshot, report
    rebuilt = replay(store)  # swap: the projections clients read are rebuilt from snapshot + log
    assert rebuilt.identical
    assert {key: store.redis.hget(key, "status") for key in seen} == seen  # every call still says what it said


def test_every_event_type_replays_to_the_projections_built_live(store: EventStore) -> None:
    rng = random.Random(3)
    for _ in range(40):
        lifecycle(store, rng)
        other_families(store, rng)
    types = {e.event.type for c in all_categories() for e in store.read(c)}

    report = replay(store, swap=False)

    assert report.identical, report
    assert {"handler.succeeded", "workflow.completed", "justification.persisted", "llm.attempt", "call.rejected",
            "tool.redispatched", "tool.cancel_requested"} <= types  # fmt: skip


def test_finished_calls_expire_and_a_rebuild_expires_the_same_ones(redis_url: str) -> None:
    store = EventStore(redis.Redis.from_url(redis_url), Keys(f"t{new_id()[-8:]}", finished_ttl_s=3600))
    old, recent = new_id(), new_id()
    for call_id, age_h in ((old, 2), (recent, 0)):
        when = datetime.now(UTC) - timedelta(hours=age_h)
        for data, key in (
            (
                ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=30),
                keys.requested_key(call_id),
            ),
            (ToolSucceeded(call_id=call_id, result=1), keys.outcome_key(call_id)),
        ):
            event = make_event(call_aggregate(call_id), data).model_copy(update={"ts": when})
            store.append(event, key)

    assert not store.redis.exists(store.live.call(old), store.live.index(call_aggregate(old)))
    assert store.redis.exists(store.live.call(recent)) and 0 < store.redis.pttl(store.live.call(recent)) <= 3600_000
    assert replay(store, swap=False).identical
