"""Every event payload type, the `AnyEventData` union discriminated on `type`, and the `Event` envelope."""

import builtins
from datetime import datetime
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from schemas.events.base import EventData
from schemas.events.handler import HandlerFailed, HandlerStarted, HandlerSucceeded
from schemas.events.justification import (
    JustificationExpired,
    JustificationPersisted,
    JustificationRevoked,
    PreflightRequired,
)
from schemas.events.llm import LLMAttempted, LLMConversationFinished, LLMConversationStarted
from schemas.events.security import CallRejected
from schemas.events.task import ToolInputProvided, ToolInputRequested
from schemas.events.tool import (
    FileDigest,
    OutputRef,
    ToolCancelRequested,
    ToolFailed,
    ToolFanInStarted,
    ToolFannedOut,
    ToolLogged,
    ToolProgress,
    ToolRedispatched,
    ToolRequested,
    ToolStarted,
    ToolSucceeded,
)
from schemas.events.workflow import (
    WorkflowAdvanced,
    WorkflowCompleted,
    WorkflowExpired,
    WorkflowStarted,
    WorkflowThoughtSubmitted,
)
from schemas.ids import EventId

AnyEventData = Annotated[
    ToolRequested
    | ToolStarted
    | ToolProgress
    | ToolLogged
    | ToolSucceeded
    | ToolFailed
    | ToolCancelRequested
    | ToolRedispatched
    | ToolFannedOut
    | ToolFanInStarted
    | WorkflowStarted
    | WorkflowThoughtSubmitted
    | WorkflowAdvanced
    | WorkflowCompleted
    | WorkflowExpired
    | LLMConversationStarted
    | LLMAttempted
    | LLMConversationFinished
    | HandlerStarted
    | HandlerSucceeded
    | HandlerFailed
    | PreflightRequired
    | JustificationPersisted
    | JustificationRevoked
    | JustificationExpired
    | CallRejected
    | ToolInputRequested
    | ToolInputProvided,
    Field(discriminator="type"),
]

SCHEMA_VERSION = 1

D = TypeVar("D", bound=EventData)


class Event(BaseModel):
    """The envelope appended to a stream (docs/event-log.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: EventId
    aggregate: str
    ts: datetime
    trace_id: str
    causation_id: EventId | None = None
    actor: str = "system"
    v: int = SCHEMA_VERSION
    data: AnyEventData

    @property
    def type(self) -> str:
        return self.data.type

    def payload(self, kind: builtins.type[D]) -> D:
        """The payload, typed as `kind`.

        Raises:
            TypeError: the event carries another type of payload.
        """
        if not isinstance(self.data, kind):
            raise TypeError(f"event {self.id} is {self.type}, not {getattr(kind, '__name__', kind)}")
        return self.data


event_data_adapter: TypeAdapter[AnyEventData] = TypeAdapter(AnyEventData)

__all__ = [
    "SCHEMA_VERSION",
    "AnyEventData",
    "CallRejected",
    "Event",
    "EventData",
    "FileDigest",
    "HandlerFailed",
    "HandlerStarted",
    "HandlerSucceeded",
    "OutputRef",
    "ToolCancelRequested",
    "ToolFailed",
    "ToolFanInStarted",
    "ToolFannedOut",
    "ToolInputProvided",
    "ToolInputRequested",
    "ToolLogged",
    "ToolProgress",
    "ToolRedispatched",
    "ToolRequested",
    "ToolStarted",
    "ToolSucceeded",
    "WorkflowAdvanced",
    "WorkflowCompleted",
    "WorkflowExpired",
    "WorkflowStarted",
    "WorkflowThoughtSubmitted",
    "event_data_adapter",
]
