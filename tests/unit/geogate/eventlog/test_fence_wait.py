"""An append meeting a replay's fence waits for the swap to end, and gives up with `LogFenced` when it never does."""

import threading

import anyio
import fakeredis
import pytest

from geogate.calls import keys
from geogate.calls.keys import Keys
from geogate.calls.store import AsyncEventStore, EventStore
from geogate.eventlog import store as store_module
from geogate.eventlog.store import LogFenced
from schemas.events import Event, ToolRequested
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


def requested() -> tuple[Event, str]:
    call_id = new_id()
    data = ToolRequested(call_id=call_id, tool="ping", queue="gdal", args={"delay_ms": 0}, timeout_s=5)
    return make_event(call_aggregate(call_id), data), keys.requested_key(call_id)


def test_an_append_waits_for_the_fence_to_lift_and_gives_up_when_it_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    store = EventStore(fakeredis.FakeRedis(), Keys(f"t{new_id()[-8:]}"))
    store.redis.set(store.keys.fence(), "replay")
    lifts = threading.Timer(0.05, lambda: store.redis.delete(store.keys.fence()))
    lifts.start()

    waited = store.append(*requested())
    lifts.join()
    monkeypatch.setattr(store_module, "FENCE_TRIES", 3)
    store.redis.set(store.keys.fence(), "replay")
    with pytest.raises(LogFenced):
        store.append(*requested())

    assert waited.new


@pytest.mark.anyio
async def test_an_async_append_waits_for_the_fence_and_gives_up_when_it_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    client = fakeredis.FakeAsyncRedis()
    store = AsyncEventStore(client, Keys(f"t{new_id()[-8:]}"))
    await client.set(store.keys.fence(), "replay")

    async def lift() -> None:
        await anyio.sleep(0.05)
        await client.delete(store.keys.fence())

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(lift)
        waited = await store.append(*requested())
    monkeypatch.setattr(store_module, "FENCE_TRIES", 3)
    await client.set(store.keys.fence(), "replay")
    with pytest.raises(LogFenced):
        await store.append(*requested())

    assert waited.new
