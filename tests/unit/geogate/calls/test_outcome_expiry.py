"""A call's outcome sets each of its keys' expiry once: the call, its handler state, its tile map and its index."""

from collections import Counter

import pytest

from geogate.calls.keys import Keys
from geogate.calls.projections import ops_for
from schemas.events import EventData, ToolFailed, ToolSucceeded
from schemas.ids import call_aggregate, new_id
from tests.support import make_event


@pytest.mark.parametrize(
    "outcome",
    [
        lambda cid: ToolSucceeded(call_id=cid, result={"ok": True}, duration_ms=1.0),
        lambda cid: ToolFailed(call_id=cid, code="path.not_found", message="no", duration_ms=1.0),
    ],
    ids=["succeeded", "failed"],
)
def test_an_outcome_expires_each_of_the_calls_keys_once_at_the_same_deadline(outcome: object) -> None:
    keys = Keys("t", finished_ttl_s=3600).projections()
    call_id = new_id()
    data: EventData = outcome(call_id)  # type: ignore[operator]
    event = make_event(call_aggregate(call_id), data)

    expiries = [op for op in ops_for(event, keys) if op.name == "PEXPIREAT"]

    per_key = Counter(op.key for op in expiries)
    assert per_key[keys.index(call_aggregate(call_id))] == 1
    assert per_key[keys.call(call_id)] == 1 and per_key[keys.tiles(call_id)] == 1
    assert set(per_key.values()) == {1}
    assert {op.args for op in expiries} == {(int(event.ts.timestamp() * 1000) + 3600 * 1000,)}
