"""The store's Redis keys: streams, dedupe records, blobs, the snapshot, the fence, locks and checkpoints, and the
namespaces projections live under. The read models' own keys extend these where the read models live.

Streams are per category (`calls`, `justifications`, `workflows`, `llm`); moving to one stream per aggregate
(the Redis Cluster path) is a change to `stream_for` alone.
"""

from dataclasses import dataclass

CATEGORIES: dict[str, str] = {
    "call": "calls",
    "justification": "justifications",
    "workflow": "workflows",
    "conversation": "llm",
    "client": "security",
}
"""Aggregate kind (the part before the first colon) → stream category. All events of one aggregate share a
stream, so an aggregate's order is its stream's order."""

DEFAULT_CATEGORY = "events"


def category_of(aggregate: str) -> str:
    return CATEGORIES.get(aggregate.split(":", 1)[0], DEFAULT_CATEGORY)


def all_categories() -> list[str]:
    return sorted({*CATEGORIES.values(), DEFAULT_CATEGORY})


@dataclass(frozen=True)
class Namespace:
    """Keys of the read models, under one namespace so that replay can rebuild them beside the live ones."""

    base: str
    finished_ttl_s: int | None = None
    """Finished runs' keys expire this long after their outcome (projectors add a PEXPIREAT from the event's
    time, so a rebuild expires exactly what the live projection expired)."""

    def pattern(self) -> str:
        return f"{self.base}:*"

    def index(self, aggregate: str) -> str:
        """List of the entry ids of one aggregate's events, in order."""
        return f"{self.base}:idx:{aggregate}"

    def key(self, *parts: str) -> str:
        """A key under this namespace; named builders of the read models are the only callers."""
        return ":".join((self.base, *parts))


@dataclass(frozen=True)
class LogKeys:
    """The store's key builders for one deployment prefix."""

    prefix: str = "geogate"
    finished_ttl_s: int | None = None
    """How long a finished call's projections stay (`GEOGATE_RETENTION_FINISHED_TTL_S`); None keeps them."""

    def stream(self, category: str) -> str:
        return f"{self.prefix}:log:{category}"

    def stream_prefix(self) -> str:
        """What every stream name begins with (strip it to get the category)."""
        return self.stream("")

    def stream_for(self, aggregate: str) -> str:
        return self.stream(category_of(aggregate))

    def dedupe(self, dedupe_key: str) -> str:
        return f"{self.prefix}:dedupe:{dedupe_key}"

    def dedupe_slot(self, dedupe_key: str) -> tuple[str, str]:
        """Where an append records `dedupe_key`: (key, hash field), or (key, "") for a string key of its own.

        A call's dedupe keys (`call:<id>:…`) are the fields of one hash per call, which expires the dedupe TTL
        after the call's last append: one key per call instead of one per event. Other keys (a client's rejections,
        a justification's decisions) keep a key each, so no hash grows for as long as its aggregate lives."""
        head, _, rest = dedupe_key.partition(":")
        call_id, _, field = rest.partition(":")
        if head == "call" and call_id and field:
            return self.dedupe(f"call:{call_id}"), field
        return self.dedupe(dedupe_key), ""

    def blob(self, sha256: str) -> str:
        return f"{self.prefix}:blob:{sha256}"

    def projections(self, namespace: str = "p") -> Namespace:
        return Namespace(f"{self.prefix}:{namespace}", self.finished_ttl_s)

    def snapshot(self) -> Namespace:
        """The projections as they stood at the snapshot's positions (`geogate trim` takes one before trimming)."""
        return self.projections("snap")

    def snapshot_positions(self) -> str:
        """Hash `stream → the last entry id the snapshot holds`; the log after it, added to the snapshot, is replay."""
        return f"{self.prefix}:snap-positions"

    def fence(self) -> str:
        """Set while a replay swaps its rebuilt projections in: appends wait (the append script spells it too)."""
        return f"{self.prefix}:fence"

    def retention_lock(self) -> str:
        """Held while a snapshot is taken and the log trimmed: one retention pass at a time."""
        return f"{self.prefix}:lock:retention"

    def checkpoints(self) -> str:
        """Hash `consumer → last absorbed entry id per stream`, consulted before trimming."""
        return f"{self.prefix}:checkpoints"
