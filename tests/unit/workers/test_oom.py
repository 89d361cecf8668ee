"""A call whose pool process the OOM killer ended (`workers.run.oom`): its attempt on that process fails, nothing
else."""

from pathlib import Path

from geogate.calls import keys
from geogate.calls.publish import follow, request_event
from geogate.calls.store import EventStore
from geogate.settings import Settings
from schemas.codec import encode
from schemas.events import Event, ToolFailed, ToolRequested, ToolStarted
from schemas.ids import call_aggregate, new_id
from schemas.tools import TOOLS
from workers.run.oom import fail_killed_call, oom_kills

SETTINGS = Settings(redis_url="redis://unused", job_memory_mb=0)


def started_on(store: EventStore, worker: str) -> Event:
    requested = request_event(TOOLS["raster_stats"], {"uri": "huge.tif"}, call_id=new_id(), actor="tester")
    call_id = requested.payload(ToolRequested).call_id
    store.append(requested, keys.requested_key(call_id))
    attempt = new_id()
    started = ToolStarted(call_id=call_id, worker=worker, attempt=attempt, queue_wait_ms=1.0)
    store.append(follow(requested, started), keys.started_key(call_id, attempt))
    return requested


def test_the_call_running_on_the_killed_process_fails_with_out_of_memory_once(fake_store: EventStore) -> None:
    requested = started_on(fake_store, "host:41")

    assert fail_killed_call(fake_store, SETTINGS, encode(requested), "host:41")
    assert not fail_killed_call(fake_store, SETTINGS, encode(requested), "host:41")  # ended already

    events = fake_store.read_aggregate(call_aggregate(requested.payload(ToolRequested).call_id))
    assert [e.type for e in events] == ["tool.requested", "tool.started", "tool.failed"]
    failed = events[-1].payload(ToolFailed)
    assert (failed.code, failed.retryable, failed.details) == (
        "job.out_of_memory",
        False,
        {"killed": "oom", "worker": "host:41", "limit_mb": 0},
    )


def test_a_call_whose_current_attempt_runs_elsewhere_is_left_alone(fake_store: EventStore) -> None:
    requested = started_on(fake_store, "host:42")

    assert not fail_killed_call(fake_store, SETTINGS, encode(requested), "host:41")

    assert fake_store.call_state(requested.payload(ToolRequested).call_id).status == "running"


def test_the_oom_kill_count_is_read_from_vmstat(tmp_path: Path) -> None:
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("pgfault 1000\noom_kill 7\nnr_free_pages 12\n")

    assert oom_kills(vmstat) == 7
    assert oom_kills(tmp_path / "absent") is None
    assert isinstance(oom_kills(), int)  # this machine's kernel reports it
