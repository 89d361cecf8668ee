"""Arguments redaction would corrupt are held beside the log: named in the event, written with its append, merged
back for the worker, and never in a stream, a projection or the queue message."""

from geogate.calls import keys
from geogate.calls.held import restored
from geogate.calls.publish import enqueue_op, request_effects, request_event
from geogate.calls.store import EventStore
from geogate.eventlog.redaction import MASK
from schemas.events import ToolRequested
from schemas.ids import new_id
from schemas.tools import TOOLS

PRESIGNED = "https://tiles.example.org/dem.tif?X-Amz-Signature=0a1b2c3d4e5f&X-Amz-Security-Token=FwoGZXIvYXdz"


def _published(store: EventStore, uri: str) -> tuple[ToolRequested, list[bytes]]:
    args = TOOLS["raster_info"].args(uri=uri).model_dump(mode="json")
    event = request_event(TOOLS["raster_info"], args, call_id=new_id(), actor="tester")
    store.append(event, "call:x:requested", effects=request_effects(event, args, store.keys, store.dedupe_ttl_s))
    data = event.payload(ToolRequested)
    return data, store.redis.lrange(keys.celery_queue_key(data.queue), 0, -1)


def test_a_presigned_url_is_masked_in_the_event_and_message_and_restored_for_the_worker(
    fake_store: EventStore,
) -> None:
    data, queued = _published(fake_store, PRESIGNED)

    assert data.held_args == ["uri"] and MASK in str(data.args["uri"])
    assert b"0a1b2c3d4e5f" not in b"".join(queued) and b"FwoGZXIvYXdz" not in b"".join(queued)
    assert restored(fake_store.redis, fake_store.keys, data).args["uri"] == PRESIGNED
    assert 0 < fake_store.redis.pttl(fake_store.keys.held_args(data.call_id)) <= fake_store.dedupe_ttl_s * 1000


def test_arguments_without_secrets_hold_nothing(fake_store: EventStore) -> None:
    args = {"uri": "dem.tif", "bands": None}
    event = request_event(TOOLS["raster_info"], args, call_id=new_id(), actor="tester")

    assert event.payload(ToolRequested).held_args == []
    assert [(op.name, op.key) for op in request_effects(event, args, fake_store.keys, 60)] == [
        ("LPUSH", enqueue_op(event).key)
    ]


def test_held_arguments_that_expired_leave_the_masked_values(fake_store: EventStore) -> None:
    data, _ = _published(fake_store, PRESIGNED)
    fake_store.redis.delete(fake_store.keys.held_args(data.call_id))

    assert restored(fake_store.redis, fake_store.keys, data).args == data.args
