"""`value_of`: the one way to read a call's result or a handler's value, inline or behind its blob reference."""

import anyio
import fakeredis
import pytest

from geogate.calls.keys import Keys
from geogate.calls.store import AsyncEventStore, EventStore
from geogate.eventlog.errors import BlobMissing
from schemas.events import OutputRef
from schemas.ids import new_id


def _stores() -> tuple[EventStore, AsyncEventStore]:
    server, keys = fakeredis.FakeServer(), Keys(f"t{new_id()[-8:]}")
    return EventStore(fakeredis.FakeRedis(server=server), keys), AsyncEventStore(
        fakeredis.FakeAsyncRedis(server=server), keys
    )


def test_an_inline_value_is_returned_as_it_is_and_a_blob_is_read_back_as_json() -> None:
    store, astore = _stores()
    ref = store.put_blob(b'{"rows": [1, 2, 3]}', 60)

    assert store.value_of({"a": 1}, None) == {"a": 1}
    assert store.value_of(None, ref) == {"rows": [1, 2, 3]}
    assert anyio.run(astore.value_of, None, ref) == {"rows": [1, 2, 3]}
    assert anyio.run(astore.value_of, [4], None) == [4]


def test_an_expired_blob_is_reported_by_its_uri() -> None:
    store, astore = _stores()
    gone = OutputRef(uri="blob://sha256:" + "0" * 64, size=2, sha256="0" * 64)

    with pytest.raises(BlobMissing, match="0" * 64):
        store.value_of(None, gone)
    with pytest.raises(BlobMissing):
        anyio.run(astore.value_of, None, gone)
