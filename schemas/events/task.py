"""Input requests inside a task (MCP tasks extension): a running job asks the client, the client answers.

Both belong to the call aggregate (`call:<id>`): the job appends `tool.input_requested` and waits; `tasks/update`
appends one `tool.input_provided` per answered key. The task is `input_required` while a requested key has no answer.
"""

from typing import Literal

from pydantic import Field, JsonValue

from schemas.events.base import EventData
from schemas.ids import CallId

InputKey = str


class ToolInputRequested(EventData):
    """The job needs input from the client: MRTR input requests by key (`{"method": …, "params": …}`)."""

    type: Literal["tool.input_requested"] = "tool.input_requested"
    call_id: CallId
    requests: dict[InputKey, dict[str, JsonValue]] = Field(min_length=1, max_length=32)

    def describe(self) -> str:
        return "asks the client: " + ", ".join(
            f"{k} ({r.get('method', '?')})" for k, r in sorted(self.requests.items())
        )


class ToolInputProvided(EventData):
    """The client's answer to one input request of a task (`tasks/update`)."""

    type: Literal["tool.input_provided"] = "tool.input_provided"
    call_id: CallId
    key: InputKey = Field(min_length=1, max_length=200)
    response: JsonValue

    def describe(self) -> str:
        return f"the client answered {self.key}"  # the answer itself stays off the ops pages
