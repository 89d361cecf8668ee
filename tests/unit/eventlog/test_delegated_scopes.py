"""Issue 14: tools that workers call for a client (the LLM host, handler chaining) are held to its scopes."""

from eventlog.calls import call_and_wait
from eventlog.store import EventStore
from schemas.events import ToolFailed
from schemas.tools import TOOLS


def test_a_client_without_write_cannot_have_a_worker_write_for_it(fake_store: EventStore) -> None:
    fake_store.redis.set(fake_store.keys.client_scopes("reader"), "llm,read")
    args = {"uri": "dem.tif", "output": "out.tif", "dst_crs": "EPSG:3857", "resampling": "bilinear"}

    outcome = call_and_wait(fake_store, TOOLS["raster_reproject"], args, actor="reader", timeout_s=1)

    assert isinstance(outcome.data, ToolFailed) and outcome.data.code == "auth.insufficient_scope"
    assert "'write'" in outcome.data.message
    assert fake_store.read("calls") == []  # nothing was published
