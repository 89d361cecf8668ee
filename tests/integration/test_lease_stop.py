"""A worker node's last word (issue 34): it gives its lease back when Redis answers, and stops at once when not."""

import threading
from pathlib import Path

import pytest
import redis

from eventlog.settings import Settings
from tests.support import redis_server
from workers import lease

pytestmark = pytest.mark.integration


def test_a_stopping_node_deletes_its_lease_when_redis_answers(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        heartbeat = lease.start(Settings(redis_url=url), ["gdal"], "prefork", 2)
        client = redis.Redis.from_url(url)
        key = heartbeat.store.keys.lease(heartbeat.lease)
        assert client.exists(key)
        heartbeat.stop()
        assert not client.exists(key)


def test_a_stopping_node_whose_redis_is_gone_stops_without_riding_out_the_reconnect_retries(tmp_path: Path) -> None:
    """A compose `down` stops Redis alongside the workers: the store's ~15 s of reconnect retries is not waited out."""
    with redis_server(tmp_path) as url:
        heartbeat = lease.start(Settings(redis_url=url), ["gdal"], "prefork", 2)
    stopping = threading.Thread(target=heartbeat.stop)
    stopping.start()
    stopping.join(timeout=10)  # a bound, not a speed: the retried delete alone took ~15 s
    assert not stopping.is_alive()
