"""Leases, the reaper and fencing, on the real runner and store (fakeredis and a real redis-server), without Celery.

A node's death is simulated by deleting its lease key, which is what a lapsed TTL leaves; the cluster suite
(tests/cluster) does the same with SIGKILL and SIGSTOP of real worker processes.
"""

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
import redis
from pydantic import BaseModel

from geogate.calls import keys
from geogate.calls.keys import Keys
from geogate.calls.publish import enqueue_op, follow, request_event
from geogate.calls.store import EventStore
from geogate.queue.unacked import UNACKED, UNACKED_INDEX
from geogate.settings import Settings
from schemas.codec import decode, encode
from schemas.events import HandlerStarted, HandlerSucceeded, ToolRedispatched, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from workers.jobkit.context import Fence, JobContext
from workers.jobkit.errors import JobSuperseded
from workers.jobkit.files import atomic_output
from workers.jobs import JOBS, Land
from workers.run import runner
from workers.run.reaper import EXHAUSTED, Reaper
from workers.sandbox import job as handler_job
from workers.tools import load_all

load_all()

LEASE_A, LEASE_B = "host-a:1:aaaa", "host-b:2:bbbb"
JOBS_PING = JOBS["ping"]


@pytest.fixture(params=["fakeredis", "redis"])
def store(request: pytest.FixtureRequest, fake_store: EventStore) -> EventStore:
    """Both backends; the real one on a database of its own, since Celery queues are not prefixed and the
    integration stack's workers consume database 0's."""
    if request.param == "fakeredis":
        return fake_store
    url = request.getfixturevalue("redis_url").rsplit("/", 1)[0] + "/3"
    client = redis.Redis.from_url(url)
    client.flushdb()
    return EventStore(client, Keys(f"t{new_id()[-8:]}"))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(redis_url="redis://unused", workspaces=str(tmp_path), max_attempts=3)


def publish(store: EventStore, handler: dict | None = None, **args: object) -> tuple[str, bytes]:
    spec = TOOLS["ping"]
    call_id = new_id()
    valid = spec.args.model_validate(args).model_dump(mode="json")
    event = request_event(spec, valid, call_id=call_id, actor="t", result_handler=handler)
    store.append(event, keys.requested_key(call_id))
    return call_id, encode(event)


def alive(store: EventStore, *leases: str) -> None:
    for lease in leases:
        store.redis.set(store.keys.lease(lease), "{}", px=60_000)


def queued(store: EventStore, queue: str = "gdal") -> list[tuple[str, int]]:
    """(call id, dispatch) of every message waiting on `queue`, decoded as a worker would."""
    return [(decode(payload).data.call_id, dispatch) for payload, dispatch in messages(store, queue)]


def messages(store: EventStore, queue: str) -> list[tuple[bytes, int]]:
    """(payload, dispatch) of every message waiting on `queue`: what a worker's task would be called with."""
    found = []
    for raw in store.redis.lrange(keys.celery_queue_key(queue), 0, -1):
        args = msgpack.unpackb(base64.b64decode(json.loads(raw)["body"]), raw=False)[0]
        found.append((args[0], args[1] if len(args) > 1 else 1))
    return found


def reap(store: EventStore, settings: Settings) -> list:
    """A pass of another node's reaper (one owner throughout, so it keeps the lock)."""
    return Reaper(store, settings, owner="other-node").run_once()


def types_of(store: EventStore, call_id: str) -> list[str]:
    return [e.type for e in store.read_aggregate(call_aggregate(call_id))]


def dies_mid_job(store: EventStore, settings: Settings, lease: str) -> object:
    """A ping job during which its node 'dies': the lease lapses and another node's reaper re-dispatches the call."""

    def job(args: BaseModel, ctx: JobContext) -> BaseModel:
        store.redis.delete(store.keys.lease(lease))
        reaped = reap(store, settings)
        assert [r.action for r in reaped] == ["redispatched"]
        ctx.progress(1, 2, "after the pause")  # the paused attempt wakes up and reports progress
        raise AssertionError("progress must refuse a superseded attempt")

    return job


def run_while_reaping(store: EventStore, settings: Settings, payload: bytes) -> None:
    """Run the call on a live node whose job asserts, mid-run, that a reaper pass leaves it alone."""
    alive(store, LEASE_A)

    def check(args: BaseModel, ctx: JobContext) -> BaseModel:
        assert reap(store, settings) == []
        return JOBS_PING(args, ctx)

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(JOBS, "ping", check)
        runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)


def test_a_run_on_a_live_lease_is_left_alone(store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(store, delay_ms=0)

    run_while_reaping(store, settings, payload)

    assert types_of(store, call_id) == ["tool.requested", "tool.started", "tool.succeeded"]
    assert store.redis.hgetall(store.live.running()) == {}


def test_a_lapsed_lease_redispatches_the_call_and_fences_the_paused_attempt(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_id, payload = publish(store, delay_ms=0)
    waiting, _ = publish(store, delay_ms=0)
    waiting_message = enqueue_op(store.read_aggregate(call_aggregate(waiting))[0])
    store.redis.lpush(waiting_message.key, *waiting_message.args)
    alive(store, LEASE_A)
    monkeypatch.setitem(JOBS, "ping", dies_mid_job(store, settings, LEASE_A))

    runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    assert types_of(store, call_id) == ["tool.requested", "tool.started", "tool.redispatched"]
    redispatched = store.read_aggregate(call_aggregate(call_id))[-1].payload(ToolRedispatched)
    assert (redispatched.dispatch, redispatched.lost_lease, redispatched.lost_worker) == (2, LEASE_A, "host-a:11")
    assert queued(store) == [(waiting, 1), (call_id, 2)]  # kombu pops from the right: the lost call goes first
    state = store.call_state(call_id)
    assert state is not None and (state.status, state.dispatch, state.attempt) == ("requested", 2, "")


def test_the_redispatched_message_runs_and_the_stale_one_is_refused(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_id, payload = publish(store, delay_ms=0)
    alive(store, LEASE_A, LEASE_B)
    with monkeypatch.context() as mp:
        mp.setitem(JOBS, "ping", dies_mid_job(store, settings, LEASE_A))
        runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    runner.run_call(store, settings, "host-a:11", payload, dispatch=1, lease=LEASE_A)  # broker gives the old one back
    runner.run_call(store, settings, "host-b:22", payload, dispatch=2, lease=LEASE_B)

    types = types_of(store, call_id)
    assert types == ["tool.requested", "tool.started", "tool.redispatched", "tool.started", "tool.succeeded"]
    state = store.call_state(call_id)
    assert state is not None and state.status == "succeeded" and state.result["worker"] == "host-b:22"


def test_a_handler_runs_in_place_on_the_tools_worker_held_by_its_lease(store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(store, handler={"language": "jmespath", "script": "pong"})
    alive(store, LEASE_A)

    runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    events = store.read_aggregate(call_aggregate(call_id))
    assert [e.type for e in events] == [
        "tool.requested",
        "tool.started",
        "tool.succeeded",
        "handler.started",
        "handler.succeeded",
    ]
    succeeded, started = events[2].payload(ToolSucceeded), events[3].payload(HandlerStarted)
    assert succeeded.handler_lease == started.lease == LEASE_A and started.worker == "host-a:11"
    assert messages(store, "sandbox") == []  # no second hop
    assert store.redis.hgetall(store.live.running()) == {}
    assert events[4].payload(HandlerSucceeded).value is True


def test_the_tools_outcome_lands_while_its_handler_runs(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off the handler's path: the run is handed to the handler's runtime before `tool.succeeded` is appended, and
    the outcome, then the handler's start, are appended in the host's work meanwhile."""
    call_id, payload = publish(store, handler={"language": "jmespath", "script": "pong"})
    alive(store, LEASE_A)
    seen: dict[str, list[str]] = {}
    real = handler_job.run_handler

    def observed(handler: object, output: object, *, meanwhile: Callable[[], object], **kwargs: Any) -> object:
        seen["handed over"] = types_of(store, call_id)

        def host_work() -> None:
            meanwhile()
            seen["host work done"] = types_of(store, call_id)

        return real(handler, output, meanwhile=host_work, **kwargs)

    monkeypatch.setattr(handler_job, "run_handler", observed)
    runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    assert seen["handed over"] == ["tool.requested", "tool.started"]
    assert seen["host work done"] == ["tool.requested", "tool.started", "tool.succeeded", "handler.started"]
    assert types_of(store, call_id)[-1] == "handler.succeeded"


def test_a_handler_that_calls_tools_goes_to_the_sandbox_queue(store: EventStore, settings: Settings) -> None:
    """It waits on other calls: in place it could hold the pool those calls need."""
    call_id, payload = publish(store, handler={"script": "tools.raster_info(uri='dem.tif')"})
    alive(store, LEASE_A)

    runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    assert types_of(store, call_id) == ["tool.requested", "tool.started", "tool.succeeded"]
    assert [decode(p).data.tool for p, _ in messages(store, "sandbox")] == ["run_result_handler"]


def test_a_worker_without_a_sandbox_sends_python_handlers_to_the_sandbox_queue(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handler_job, "_SANDBOX_HERE", False)  # what a host without bubblewrap found at its start
    python, _ = publish(store, handler={"script": "tool_output['pong']"})
    jmespath, _ = publish(store, handler={"language": "jmespath", "script": "pong"})
    alive(store, LEASE_A)

    for call_id in (python, jmespath):
        [payload] = [encode(e) for e in store.read_aggregate(call_aggregate(call_id)) if e.type == "tool.requested"]
        runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    assert [decode(p).data.call_id for p, _ in messages(store, "sandbox")] == [python]
    assert types_of(store, jmespath)[-1] == "handler.succeeded"  # no sandbox needed: still in place


def test_a_handler_held_in_place_by_a_node_that_died_is_redispatched_and_ends_once(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node dies between `tool.succeeded` (which names its lease) and `handler.started`; it wakes up later."""
    call_id, payload = publish(store, handler={"language": "jmespath", "script": "pong"})
    alive(store, LEASE_A, LEASE_B)
    in_place = handler_job._run_in_place

    def dies_then_wakes(call: object, output: object, ctx: JobContext, land: Land) -> None:
        assert land()
        store.redis.delete(store.keys.lease(LEASE_A))
        assert [(r.stage, r.action) for r in reap(store, settings)] == [("handler", "redispatched")]
        in_place(call, output, ctx, land)  # the paused node wakes up and runs it after all

    monkeypatch.setattr(handler_job, "_run_in_place", dies_then_wakes)
    runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)
    [(message, dispatch)] = messages(store, "sandbox")
    runner.run_call(store, settings, "host-b:22", message, dispatch=dispatch, lease=LEASE_B)

    types = types_of(store, call_id)
    assert types[:4] == ["tool.requested", "tool.started", "tool.succeeded", "tool.redispatched"]
    assert types.count("handler.succeeded") == 1 and "handler.failed" not in types
    assert store.redis.hget(store.live.handler(call_id), "status") == b"succeeded"
    assert store.redis.hgetall(store.live.running()) == {}


def test_a_run_lost_on_its_last_attempt_fails_naming_the_call_and_its_workers(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_id, payload = publish(store, delay_ms=0)
    monkeypatch.setitem(JOBS, "ping", dies_mid_job(store, settings, LEASE_A))
    for dispatch in (1, 2):
        alive(store, LEASE_A)
        runner.run_call(store, settings, f"host-a:{dispatch}", payload, dispatch=dispatch, lease=LEASE_A)

    def dies_for_good(args: BaseModel, ctx: JobContext) -> BaseModel:
        store.redis.delete(store.keys.lease(LEASE_A))
        assert [r.action for r in reap(store, settings)] == ["failed"]
        ctx.progress(1, 2)
        raise AssertionError("unreachable")

    monkeypatch.setitem(JOBS, "ping", dies_for_good)
    alive(store, LEASE_A)
    runner.run_call(store, settings, "host-a:3", payload, dispatch=3, lease=LEASE_A)

    state = store.call_state(call_id)
    assert state is not None and state.status == "failed" and state.error_code == EXHAUSTED
    assert call_id in state.error_message and "started 3 times" in state.error_message
    assert all(f"host-a:{n}" in state.error_message for n in (1, 2, 3))
    assert types_of(store, call_id).count("tool.failed") == 1


def test_a_job_that_kills_its_pool_process_every_time_fails_after_max_attempts(
    store: EventStore, settings: Settings
) -> None:
    """Celery requeues at once when only a pool child dies; the runner's attempt bound stops the loop."""
    call_id, payload = publish(store, delay_ms=0)
    for n in range(settings.max_attempts):  # each start 'dies': no outcome follows it
        data = ToolStarted(call_id=call_id, worker=f"w:{n}", attempt=f"a{n}", queue_wait_ms=0)
        store.append(follow(decode(payload), data), keys.started_key(call_id, f"a{n}"))

    runner.run_call(store, settings, "w:last", payload)

    state = store.call_state(call_id)
    assert state is not None and state.status == "failed" and state.error_code == EXHAUSTED
    assert types_of(store, call_id).count("tool.started") == settings.max_attempts


def test_only_the_process_holding_the_lock_reaps(store: EventStore, settings: Settings) -> None:
    assert Reaper(store, settings, owner="first").run_once() == []
    assert store.redis.get(store.keys.reaper_lock()) == b"first"

    assert Reaper(store, settings, owner="second")._lead() is False
    assert Reaper(store, settings, owner="first")._lead() is True


def test_a_superseded_attempt_leaves_no_file_and_the_winners_file_stays(tmp_path: Path) -> None:
    target = tmp_path / "out.tif"
    winner = Fence("c", "win", lambda: True)
    with atomic_output(target, winner) as tmp:
        tmp.write_bytes(b"the winner")
    loser = Fence("c", "lost", lambda: False)

    with pytest.raises(JobSuperseded), atomic_output(target, loser) as tmp:
        tmp.write_bytes(b"the paused attempt")

    assert target.read_bytes() == b"the winner" and [p.name for p in tmp_path.iterdir()] == ["out.tif"]


def test_a_new_attempt_removes_what_a_killed_attempt_left_beside_the_target(tmp_path: Path) -> None:
    target = tmp_path / "out.shp"
    (tmp_path / ".out.geogate.dead.partial.shp").write_bytes(b"left by a SIGKILLed attempt")
    (tmp_path / ".out.geogate.dead.partial.dbf").write_bytes(b"its sidecar")

    with atomic_output(target, Fence("c", "next", lambda: True)) as tmp:
        tmp.write_bytes(b"whole")
        tmp.with_suffix(".dbf").write_bytes(b"table")

    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.dbf", "out.shp"]


def deliver(store: EventStore, call_id: str, *, seconds_ago: float) -> None:
    """What kombu does when a worker takes a message: `unacked` holds it, `unacked_index` its delivery time."""
    message = enqueue_op(store.read_aggregate(call_aggregate(call_id))[0])
    tag = new_id()
    envelope = [json.loads(message.args[0]), "gdal", "gdal"]
    store.redis.hset(UNACKED, tag, json.dumps(envelope))
    store.redis.zadd(UNACKED_INDEX, {tag: time.time() - seconds_ago})


def test_a_message_delivered_to_a_node_that_died_before_the_start_is_redispatched(
    store: EventStore, settings: Settings
) -> None:
    stranded, _ = publish(store, delay_ms=0)
    just_taken, _ = publish(store, delay_ms=0)
    deliver(store, stranded, seconds_ago=settings.lease_ttl_s + 5)
    deliver(store, just_taken, seconds_ago=0.5)

    reaped = reap(store, settings)

    assert [(r.call_id, r.action) for r in reaped] == [(stranded, "redispatched")]
    assert types_of(store, stranded) == ["tool.requested", "tool.redispatched"]
    assert types_of(store, just_taken) == ["tool.requested"]
    assert queued(store) == [(stranded, 2)]
    assert reap(store, settings) == []  # the stale delivery is now an old dispatch: left for the broker to drop


def test_a_delivered_message_whose_call_started_is_left_alone(store: EventStore, settings: Settings) -> None:
    call_id, payload = publish(store, delay_ms=0)
    deliver(store, call_id, seconds_ago=settings.lease_ttl_s + 5)

    run_while_reaping(store, settings, payload)

    assert types_of(store, call_id) == ["tool.requested", "tool.started", "tool.succeeded"]


def test_a_start_that_redis_lost_in_a_restart_is_made_again_and_the_outcome_lands(
    store: EventStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`appendfsync everysec` loses the last second of writes: the call's hash is back to `requested`."""
    call_id, payload = publish(store)
    alive(store, LEASE_A)
    key = store.live.call(call_id)
    before = store.redis.hgetall(key)

    def start_forgotten(args: BaseModel, ctx: JobContext) -> BaseModel:
        store.redis.delete(key)
        store.redis.hset(key, mapping=before)  # the hash as it was before the start
        return JOBS_PING(args, ctx)

    monkeypatch.setitem(JOBS, "ping", start_forgotten)
    runner.run_call(store, settings, "host-a:11", payload, lease=LEASE_A)

    state = store.call_state(call_id)
    assert state is not None and state.status == "succeeded"
    assert types_of(store, call_id).count("tool.succeeded") == 1
