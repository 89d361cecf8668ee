"""`geogate dev` without a redis-server binary: fakeredis' TCP server stands in, Lua append included."""

import socket
from pathlib import Path

import pytest
import redis

from geogate.calls import keys
from geogate.calls.store import EventStore
from geogate.cli import dev
from geogate.settings import Settings
from schemas.events import ToolRequested
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


def test_without_redis_server_dev_mode_serves_fakeredis_that_runs_the_append_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    children = dev.Children()

    url = dev.start_redis(Settings(data_dir=tmp_path), children)

    assert children.procs == children.services == []  # nothing spawned: an in-process TCP server
    store = EventStore(redis.Redis.from_url(url))
    call_id = new_id()
    data = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={}, timeout_s=1)
    assert store.append(make_event(call_aggregate(call_id), data), keys.requested_key(call_id)).new
    assert store.call_state(call_id).status == "requested"


def test_waiting_for_a_redis_that_accepts_but_does_not_answer_ends_in_a_clear_exit() -> None:
    """A redis-server still loading a large log may take connections and answer nothing for a while: the wait
    keeps trying until its deadline, and then says so (no socket timeout escapes)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"

        with pytest.raises(SystemExit, match="did not start"):
            dev._wait_for_redis(url, timeout_s=0.5)
