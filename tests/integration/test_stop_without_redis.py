"""A role's last word (issue 34): a worker node gives its lease back and a gateway its checkpoints when Redis
answers, and each stops at once when Redis is gone (a compose `down` stops Redis alongside them)."""

import os
import signal
import threading
from pathlib import Path

import pytest
import redis

from geogate.settings import Settings
from tests.integration.conftest import start_gateway
from tests.support import free_port, redis_server
from workers.run import lease

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


def test_a_gateway_whose_redis_is_gone_stops_on_sigterm_without_riding_out_the_reconnect_retries(
    tmp_path: Path,
) -> None:
    port = free_port()
    with redis_server(tmp_path) as url:
        gateway = start_gateway({**os.environ, "REDIS_URL": url}, port)
    gateway.send_signal(signal.SIGTERM)  # what the container engine sends
    gateway.wait(timeout=10)  # a bound, not a speed: giving the checkpoints back alone took ~15 s
