"""A lineage (`geogate.calls.lineage`) written as W3C PROV-JSON, and the drift of its files.

Files are entities, one per version (path and sha256: `file:<path>#<sha256 prefix>`); calls are activities
(`call:<id>`, with tool, arguments, times, software versions, justifications, decisions and tiles); workers and
clients are agents. Relations: `used` (a call read a file, in the role of the argument that named it),
`wasGeneratedBy`, `wasDerivedFrom` (each output from each input of its call) and `wasAssociatedWith`. Structured
values (arguments, versions) are typed literals holding JSON (`gg:json`), as PROV-JSON's values are
strings, numbers or typed literals. See docs/provenance.md.
"""

import json
from collections.abc import Callable
from typing import Any

from schemas.events import FileDigest
from schemas.tools.provenance import Drift, Step

PREFIXES = {
    "gg": "urn:geogate:",
    "call": "urn:geogate:call:",
    "worker": "urn:geogate:worker:",
    "client": "urn:geogate:client:",
    "file": "file://",
}

DigestOf = Callable[[str], str | None]
"""A file's sha256 now, None when it is gone."""


def entity_id(item: FileDigest) -> str:
    """The PROV id of one version of a file (a remote input: its URL)."""
    if item.sha256 is None:
        return f"gg:remote/{item.path}"
    return f"file:{item.path}#{item.sha256[:16]}"


def _json(value: Any) -> dict[str, str]:
    return {"$": json.dumps(value, sort_keys=True, separators=(",", ":")), "type": "gg:json"}


class _Doc:
    def __init__(self) -> None:
        self.body: dict[str, Any] = {"prefix": dict(PREFIXES), "entity": {}, "activity": {}, "agent": {}}
        self.counts: dict[str, int] = {}

    def relate(self, kind: str, record: dict[str, Any]) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.body.setdefault(kind, {})[f"_:{kind}{self.counts[kind]}"] = record

    def file(self, item: FileDigest) -> str:
        key = entity_id(item)
        attrs: dict[str, Any] = {"prov:type": "gg:File", "prov:label": item.path, "gg:path": item.path}
        if item.sha256 is not None:
            attrs["gg:sha256"] = item.sha256
        if item.size is not None:
            attrs["gg:size"] = item.size
        self.body["entity"].setdefault(key, attrs)
        return key

    def agent(self, key: str, kind: str, activity: str, role: str) -> None:
        self.body["agent"].setdefault(key, {"prov:type": kind})
        self.relate("wasAssociatedWith", {"prov:activity": activity, "prov:agent": key, "prov:role": role})


def _activity(step: Step) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "prov:type": "gg:ToolCall",
        "gg:tool": step.tool,
        "gg:args": _json(step.args),
    }
    times = {
        "prov:startTime": step.started_at,
        "prov:endTime": step.finished_at,
        "gg:requestedAt": step.requested_at,
    }
    attrs |= {k: v for k, v in times.items() if v}
    extras = {
        "gg:versions": step.versions,
        "gg:justifications": step.justifications,
        "gg:decisions": step.decisions,
        "gg:tiles": step.tiles.model_dump() if step.tiles else None,
    }
    attrs |= {k: _json(v) for k, v in extras.items() if v}
    if step.duration_ms:
        attrs["gg:durationMs"] = step.duration_ms
    if step.expired:
        attrs["gg:expired"] = True
    return attrs


def prov_document(steps: list[Step]) -> dict[str, Any]:
    """The PROV-JSON document of a lineage."""
    doc = _Doc()
    for step in steps:
        activity = f"call:{step.call_id}"
        doc.body["activity"][activity] = _activity(step)
        used = [doc.file(item) for item in step.inputs]
        for item, key in zip(step.inputs, used, strict=True):
            doc.relate("used", {"prov:activity": activity, "prov:entity": key, "prov:role": item.role or "input"})
        for item in step.outputs:
            out = doc.file(item)
            doc.relate("wasGeneratedBy", {"prov:entity": out, "prov:activity": activity, "prov:time": step.finished_at})
            for key in used:
                doc.relate(
                    "wasDerivedFrom", {"prov:generatedEntity": out, "prov:usedEntity": key, "prov:activity": activity}
                )
        if step.worker:
            doc.agent(f"worker:{step.worker}", "prov:SoftwareAgent", activity, "worker")
        if step.actor:
            doc.agent(f"client:{step.actor}", "prov:Agent", activity, "client")
    return doc.body


def drift(steps: list[Step], digest_of: DigestOf) -> list[Drift]:
    """Every file version of the lineage whose current content differs from the recorded one (or that is gone)."""
    found: list[Drift] = []
    seen: set[tuple[str, str]] = set()
    for step in reversed(steps):  # the final output first
        for role, items in (("output", step.outputs), ("input", step.inputs)):
            for item in items:
                if item.sha256 is None or (item.path, item.sha256) in seen:
                    continue
                seen.add((item.path, item.sha256))
                now = digest_of(item.path)
                if now != item.sha256:
                    found.append(
                        Drift.model_validate(
                            {
                                "path": item.path,
                                "role": role,
                                "recorded": item.sha256,
                                "current": now,
                                "call_id": step.call_id,
                            }
                        )
                    )
    return found
