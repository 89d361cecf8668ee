"""Fixtures shared across the suite: stores on fakeredis and on a real redis-server the session starts itself."""

from collections.abc import Iterator

import fakeredis
import pytest
import redis
from hypothesis import settings as hypothesis_settings

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from schemas.ids import new_id
from tests.support import redis_server

# No per-example deadline: it is a wall-clock assertion, and it flakes on a loaded 2-core CI machine.
hypothesis_settings.register_profile("geogate", deadline=None)
hypothesis_settings.load_profile("geogate")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def fake_store() -> EventStore:
    return EventStore(fakeredis.FakeRedis(), Keys(f"t{new_id()[-8:]}"))


@pytest.fixture
def real_store(redis_url: str) -> EventStore:
    return EventStore(redis.Redis.from_url(redis_url), Keys(f"t{new_id()[-8:]}"))


@pytest.fixture(params=["fakeredis", "redis"])
def store(request: pytest.FixtureRequest) -> EventStore:
    """The same contract, run against fakeredis and against a real redis-server."""
    return request.getfixturevalue("fake_store" if request.param == "fakeredis" else "real_store")
