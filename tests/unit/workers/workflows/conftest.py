"""Fixtures of the workflow tests: a fakeredis store, job contexts on it, and a settable clock."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import fakeredis
import pytest

from geogate.calls.keys import Keys
from geogate.calls.store import EventStore
from schemas.ids import new_id
from workers.jobkit.context import JobContext
from workers.tools.workflows import definitions
from workers.workflows.service import WorkflowService

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """A clock that moves only when told to."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def wf_store() -> EventStore:
    return EventStore(fakeredis.FakeRedis(), Keys(f"t{new_id()[-8:]}"))


@pytest.fixture
def make_ctx(wf_store: EventStore) -> Callable[[], JobContext]:
    """A fresh JobContext (a new call id each time) whose store is `wf_store`."""
    return lambda: JobContext(call_id=new_id(), roots=[], store=wf_store)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(wf_store: EventStore, clock: Clock) -> WorkflowService:
    """The service the jobs use, with the shipped definitions, a one-hour idle limit and a settable clock."""
    return WorkflowService(wf_store, definitions(), ttl_s=3600.0, clock=clock)
