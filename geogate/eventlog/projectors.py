"""What the store is handed: the read models it keeps current, as ops on a namespace of projection keys.

The store knows no read model. Its owner hands it a `Projectors`: the writes each event causes in the projections
(applied by the append script on the live path, and by the replay fold), the writes a live append carries besides
(effects a replay must not repeat, such as a queue push), and the consumers that fold the log outside the append
script, keeping state across events, which replay and retention bring level and rebuild beside the others.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from geogate.eventlog.append import Op
from schemas.events import Event

if TYPE_CHECKING:
    import redis

    from geogate.eventlog.keys import LogKeys, Namespace
    from geogate.eventlog.store import StoredEvent

OpsFor = Callable[[Event, Any], list[Op]]
"""`(event, namespace) → writes`: a pure fold of one event into the read models under a namespace of keys (the
store's owner types the namespace with its own key builders)."""


class Batches(Protocol):
    """A consumer's rebuild in progress: given the log's events in order, a batch at a time."""

    def add(self, events: list["StoredEvent"]) -> None: ...


class Consumer(Protocol):
    """A read model folded outside the append script by a checkpointed reader of the log."""

    def catch_up(self, client: "redis.Redis", keys: "LogKeys", *, bounded: bool = False) -> int:
        """Absorb the log into the live read model; returns the events absorbed (`bounded`: no more than the log
        held when it began)."""
        ...

    def step(self, client: "redis.Redis", keys: "LogKeys") -> int:
        """Absorb the next batch into the live read model; returns how many (0 when level with the log)."""
        ...

    def cursor(self, target: "Namespace") -> str:
        """The key that moves whenever the consumer absorbs events into `target` (a replay's swap WATCHes it)."""
        ...

    def rebuild(self, client: "redis.Redis", keys: "LogKeys", target: "Namespace", *, resume: bool) -> Batches:
        """A fresh fold into `target` (`resume`: going on from what `target` holds, a snapshot copied there)."""
        ...


def _none(event: Event, target: Any) -> list[Op]:
    return []


@dataclass(frozen=True)
class Projectors:
    """The registry of read models handed to the store (and through it to replay and retention)."""

    ops: OpsFor = _none
    """The projection writes of an event: live (in the append script) and in replay (`geogate.eventlog.fold`)."""
    effects: OpsFor = _none
    """Writes that ride on a live append only, after `ops` (a replay rebuilds the state and pushes nothing)."""
    consumers: Sequence[Consumer] = ()
