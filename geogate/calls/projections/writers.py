"""Which call last wrote each file (`…:p:writers`): folded from the `outputs` of `tool.succeeded`.

Provenance starts here: a path leads to the call that wrote it, whose events name its inputs, which lead to the calls
that wrote them. A later write of the same path replaces the entry; entries do not expire with the call (a file
outlives its call's projection), so the hash holds one field per path ever written.
"""

import json

from geogate.calls.keys import ProjectionKeys
from geogate.calls.projections.registry import projector
from geogate.eventlog.append import Op, hset
from schemas.events import Event, ToolSucceeded


def writer_value(event: Event, call_id: str, sha256: str | None, size: int | None) -> str:
    """The entry of one written file: pure, so a replay writes the same bytes."""
    entry = {"call": call_id, "sha256": sha256, "size": size, "at": event.ts.isoformat()}
    return json.dumps(entry, separators=(",", ":"), sort_keys=True)


@projector("tool.succeeded")
def _wrote(event: Event, keys: ProjectionKeys) -> list[Op]:
    data = event.payload(ToolSucceeded)
    if not data.outputs:
        return []
    return [hset(keys.writers(), {o.path: writer_value(event, data.call_id, o.sha256, o.size) for o in data.outputs})]
