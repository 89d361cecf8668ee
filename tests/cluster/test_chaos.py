"""Chaos on the cluster's own processes (issue: a dead worker node costs seconds, not twenty minutes).

One test per fault. Each ends by checking the log: every call answered, exactly one outcome per call, one
`tool.requested` per call, and `geogate replay --check` clean. Recovery times are printed (`make chaos` shows
them); they are figures for the README, never assertions.
"""

import hashlib
import json
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from geogate.calls.projections.running import RunningEntry
from schemas.events import ToolRedispatched, ToolStarted, ToolSucceeded
from schemas.ids import call_aggregate
from tests.cluster.conftest import FULL, LOAD, Cluster, make_cluster, monotonic_ms, write_raster
from tests.cluster.load import Load, assert_log_is_whole, during_faults, outcome_at_ms, requested_at_ms, run_load
from tests.support import wait_for

pytestmark = pytest.mark.cluster

FAULT_EVERY_S = 4.0 if FULL else 3.0
"""The fault schedule: one fault this often while the load runs (the issue's 'every 4 s')."""


def running(cluster: Cluster) -> list[RunningEntry]:
    store = cluster.store()
    return [RunningEntry.parse(k, v) for k, v in store.redis.hgetall(store.live.running()).items()]


def live_runs(cluster: Cluster) -> list[RunningEntry]:
    return [e for e in running(cluster) if cluster.node_holding(e.lease) is not None]


def stats_load(gateways: Callable[[], list[str]]) -> Load:
    return Load(gateways, "raster_stats", {"uri": "big.tif"}, LOAD.calls, LOAD.concurrency)


def report(name: str, figures: dict[str, object]) -> None:
    print(f"\n[chaos] {name}: {json.dumps(figures)}")


def test_whole_worker_sigkill_during_load_recovers_every_call_through_redispatch(cluster: Cluster) -> None:
    kills: list[tuple[float, str, list[str]]] = []

    def faults(done: threading.Event) -> None:
        for n in range(LOAD.faults):
            if n and done.wait(FAULT_EVERY_S):
                return
            wait_for(lambda: bool(live_runs(cluster)) or done.is_set(), what="a running call", timeout_s=120)
            runs = live_runs(cluster)
            if not runs:
                return
            victim = cluster.node_holding(runs[0].lease)
            assert victim is not None
            held = [e.call_id for e in runs if e.lease == runs[0].lease]
            kills.append((monotonic_ms(), runs[0].lease, held))
            cluster.signal_node(victim, signal.SIGKILL)
            cluster.add_worker()  # a fresh node replaces the dead one, as an orchestrator would

    answers = during_faults(faults, stats_load(lambda: [u for u, _ in cluster.gateways]))

    store = cluster.store()
    assert_log_is_whole(store, cluster.env, answers, LOAD.calls)
    assert all(a.error is None for a in answers), [a.error for a in answers if a.error]
    assert kills, "the load ended before any fault"
    recovery = []
    for at_ms, lease, held in kills:
        for call_id in held:
            events = store.read_aggregate(call_aggregate(call_id))
            lost = [e for e in events if isinstance(e.data, ToolRedispatched) and e.data.lost_lease == lease]
            finished_before = any(e.type == "tool.succeeded" and e.ts.timestamp() * 1000 < at_ms for e in events)
            assert lost or finished_before, f"call {call_id} held by the killed node was not re-dispatched"
            if lost:
                recovery.append(outcome_at_ms(store, call_id) - at_ms)
    report(
        "sigkill",
        {"calls": LOAD.calls, "kills": len(kills), "affected": len(recovery), "max_recovery_s": max(recovery) / 1000},
    )


SLOW_HANDLER = {"script": "sum(range(4_000_000)) * 0 + tool_output['band_stats'][0]['mean']"}
"""A Python handler that computes for a while (well inside its CPU limit), so that a fault can land during it."""


def test_whole_worker_sigkill_during_in_place_handlers_ends_every_handler_once(cluster: Cluster) -> None:
    """Handlers run in place on the tool's node: killing that node mid-handler leaves the run to the reaper."""
    kills: list[tuple[str, list[str]]] = []

    def handlers() -> list[RunningEntry]:
        return [e for e in live_runs(cluster) if e.stage == "handler"]

    def faults(done: threading.Event) -> None:
        for n in range(LOAD.faults):
            if n and done.wait(FAULT_EVERY_S):
                return
            wait_for(lambda: bool(handlers()) or done.is_set(), what="a running handler", timeout_s=120)
            runs = handlers()
            if not runs:
                return
            victim = cluster.node_holding(runs[0].lease)
            if victim is None:
                continue
            kills.append((runs[0].lease, [e.call_id for e in runs if e.lease == runs[0].lease]))
            cluster.signal_node(victim, signal.SIGKILL)
            cluster.add_worker()

    args = {"uri": "big.tif", "result_handler": SLOW_HANDLER}
    load = Load(lambda: [u for u, _ in cluster.gateways], "raster_stats", args, LOAD.calls, LOAD.concurrency)
    answers = during_faults(faults, load)

    store = cluster.store()
    assert_log_is_whole(store, cluster.env, answers, LOAD.calls)
    assert all(a.error is None for a in answers), [a.error for a in answers if a.error]
    assert kills, "the load ended before any fault"
    for answer in answers:
        types = [e.type for e in store.read_aggregate(call_aggregate(answer.call_id))]
        assert types.count("handler.succeeded") == 1 and "handler.failed" not in types, (answer.call_id, types)
    for lease, held in kills:
        for call_id in held:
            events = store.read_aggregate(call_aggregate(call_id))
            lost = [e for e in events if isinstance(e.data, ToolRedispatched) and e.data.lost_lease == lease]
            assert lost and lost[0].data.stage == "handler", f"the handler of {call_id} was not re-dispatched"
    report("sigkill mid-handler", {"calls": LOAD.calls, "kills": len(kills), "handlers": sum(len(h) for _, h in kills)})


def test_a_paused_worker_that_wakes_after_its_lease_lapsed_changes_nothing(tmp_path: Path, raster_dir: Path) -> None:
    cluster = make_cluster(tmp_path, raster_dir, gateways=1, workers=1)
    try:
        write_raster(cluster.workspace / "pause.tif", 2048)
        _pause_and_wake(cluster)
    finally:
        cluster.stop()
        cluster.redis.kill()


def _pause_and_wake(cluster: Cluster) -> None:
    store, first = cluster.store(), cluster.workers[0]
    outcome: dict[str, object] = {}
    args = {"uri": "pause.tif", "output": "out.tif", "compression": "deflate"}
    load = Load(lambda: [cluster.gateways[0][0]], "raster_convert", args, calls=1, concurrency=1)
    thread = threading.Thread(target=lambda: outcome.setdefault("answers", run_load(load)))
    thread.start()
    wait_for(lambda: bool(running(cluster)), what="the convert to start on the first worker", timeout_s=60)
    cluster.signal_node(first, signal.SIGSTOP)  # frozen past every timeout
    paused_at = monotonic_ms()
    cluster.add_worker()
    thread.join(timeout=120)
    answers = outcome["answers"]
    cluster.signal_node(first, signal.SIGCONT)
    wait_for(
        lambda: store.redis.hlen("unacked") == 0, what="the woken worker to finish its stale attempt", timeout_s=60
    )

    assert_log_is_whole(store, cluster.env, answers, 1)
    call_id = answers[0].call_id
    events = store.read_aggregate(call_aggregate(call_id))
    types = [e.type for e in events]
    assert types.count("tool.started") == 2 and types.count("tool.redispatched") == 1 and answers[0].error is None
    succeeded = next(e.payload(ToolSucceeded) for e in events if isinstance(e.data, ToolSucceeded))
    winner = [e.payload(ToolStarted) for e in events if isinstance(e.data, ToolStarted)][-1]
    assert succeeded.worker == winner.worker
    output = cluster.workspace / "out.tif"
    assert hashlib.sha256(output.read_bytes()).hexdigest() == succeeded.result["output"]["sha256"]
    assert sorted(p.name for p in cluster.workspace.iterdir()) == ["big.tif", "out.tif", "pause.tif"]
    report("pause", {"recovery_s": (outcome_at_ms(store, call_id) - paused_at) / 1000})


def test_redis_killed_and_restarted_on_its_own_data_mid_load_loses_nothing(cluster: Cluster) -> None:
    restarted: list[float] = []

    def fault(done: threading.Event) -> None:
        if done.wait(FAULT_EVERY_S / 2):
            return
        restarted.append(monotonic_ms())
        cluster.redis.kill()  # SIGKILL: whatever it acknowledged must be in its AOF
        done.wait(1.0)  # the outage: the restart comes a second later, as a supervisor would restart it
        cluster.redis.start()
        restarted.append(monotonic_ms())

    answers = during_faults(fault, stats_load(lambda: [u for u, _ in cluster.gateways]))

    store = cluster.store()
    assert restarted, "the load ended before the fault"
    assert_log_is_whole(store, cluster.env, answers, LOAD.calls)
    told_ok = [a for a in answers if a.error is None]
    assert len(told_ok) == LOAD.calls, [a.error for a in answers if a.error]
    killed_at, back_at = restarted
    in_flight = [a.call_id for a in answers if requested_at_ms(store, a.call_id) < killed_at]
    waited = [outcome_at_ms(store, c) - back_at for c in in_flight if outcome_at_ms(store, c) > killed_at]
    figures = {"calls": LOAD.calls, "outage_s": (back_at - killed_at) / 1000, "in_flight_at_kill": len(waited)}
    report("redis-restart", figures | {"slowest_in_flight_answered_after_restart_s": max(waited, default=0) / 1000})


def test_a_gateway_killed_mid_load_loses_no_call_and_retries_attach_through_another(cluster: Cluster) -> None:
    first = cluster.gateways[0][1]
    killed: list[float] = []

    def gateways() -> list[str]:
        return [u for u, p in cluster.gateways if p.poll() is None]

    def fault(done: threading.Event) -> None:
        wait_for(lambda: len(running(cluster)) >= 2, what="calls in flight", timeout_s=120)
        first.kill()
        first.wait()
        killed.append(monotonic_ms())

    answers = during_faults(fault, stats_load(gateways))

    store = cluster.store()
    assert killed
    assert_log_is_whole(store, cluster.env, answers, LOAD.calls)
    assert all(a.error is None for a in answers)
    retried = [a for a in answers if a.tries > 1]
    assert retried, "no call was in flight on the killed gateway"
    report("gateway-kill", {"calls": LOAD.calls, "retried_through_the_other": len(retried)})


def test_a_poison_job_that_kills_every_node_it_lands_on_fails_clearly_after_max_attempts(cluster: Cluster) -> None:
    """The job gets its node killed each time it starts (an OOM kill of the container): bounded, then a clear error."""
    store = cluster.store()
    kills: list[str] = []

    def killer() -> None:
        seen: set[str] = set()
        for _ in range(3):  # GEOGATE_MAX_ATTEMPTS's default: the third loss ends it
            wait_for(lambda: _poison_started(cluster, seen) is not None, what="the poison job to start", timeout_s=120)
            entry = _poison_started(cluster, seen)
            assert entry is not None
            seen.add(entry.attempt)
            node = cluster.node_holding(entry.lease)
            assert node is not None
            cluster.signal_node(node, signal.SIGKILL)
            kills.append(entry.lease)
            cluster.add_worker()

    thread = threading.Thread(target=killer)
    thread.start()
    urls = [u for u, _ in cluster.gateways]
    bad = Load(lambda: urls, "ping", {"delay_ms": 4321}, calls=1, concurrency=1)
    good = Load(lambda: urls, "raster_stats", {"uri": "big.tif"}, calls=6, concurrency=2)
    try:
        answers = run_load(bad) + run_load(good)
    finally:
        thread.join(timeout=120)

    assert answers[0].error == "call.attempts_exhausted"
    state = store.call_state(answers[0].call_id)
    assert state is not None and answers[0].call_id in state.error_message and state.attempts == 3
    assert all(a.error is None for a in answers[1:])
    assert_log_is_whole(store, cluster.env, answers, 7)
    assert sum(1 for w in cluster.workers if w.poll() is None) == 3
    report("poison", {"starts": state.attempts, "nodes_lost": len(kills)})


def _poison_started(cluster: Cluster, seen: set[str]) -> RunningEntry | None:
    store = cluster.store()
    for entry in running(cluster):
        args = store.redis.hget(store.live.call(entry.call_id), "args") or b"{}"
        if entry.stage == "tool" and entry.attempt not in seen and json.loads(args).get("delay_ms") == 4321:
            return entry
    return None
