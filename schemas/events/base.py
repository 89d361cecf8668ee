"""Base of every event payload: immutable, closed to unknown fields, discriminated by its `type` literal."""

from pydantic import BaseModel, ConfigDict


class EventData(BaseModel):
    """Base of every event payload. Subclasses declare `type: Literal["family.verb"]` exactly once."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
